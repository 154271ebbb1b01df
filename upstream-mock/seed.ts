import { recordRng, type Rng } from './prng.js'
import {
  PHONE_KINDS, TASK_PRIORITIES, TASK_STATUSES, UI_THEMES, VIDEO_PROVIDERS,
  type Meeting, type Task, type User
} from './schemas.js'
import {
  CHECKLIST_LABELS, CITIES, FIRST_NAMES, JOB_TITLES, LAST_NAMES, MEETING_TITLES, ROOMS, STREET_LINE_2, STREETS,
  TASK_OBJECTS, TASK_TAGS, TASK_VERBS
} from './seed-words.js'

/**
 * Deterministic seed records. Each record is a pure function of (seed, id, users):
 * nothing reads the clock or Math.random, so the same seed and size give the same
 * bytes in every process and on every call.
 */
export interface SeedSize { users: number, tasks: number, meetings: number }

export function seedSize (users: number): SeedSize {
  return { users, tasks: 2 * users, meetings: Math.max(1, Math.floor(users / 2)) }
}

const SALT = { user: 1, task: 2, meeting: 3 } as const
const SECOND_MS = 1000
const DAY_MS = 86_400_000
/** Seeded records were created in [2022-01-01, 2025-07-01) and touched within the following 180 days. */
const CREATED_FROM_MS = Date.UTC(2022, 0, 1)
const CREATED_SPAN_S = (Date.UTC(2025, 6, 1) - CREATED_FROM_MS) / SECOND_MS
const TEAMS = 24

const iso = (ms: number): string => new Date(ms).toISOString()
const day = (ms: number): string => iso(ms).slice(0, 10)

function createdAndUpdated (rng: Rng): { created: number, updated: number } {
  const created = CREATED_FROM_MS + rng.int(0, CREATED_SPAN_S) * SECOND_MS
  return { created, updated: rng.chance(0.3) ? created : created + rng.int(60, 180 * 86_400) * SECOND_MS }
}

/** Fills a `#`/`A` template: `SW# #AA` → `SW4 7QK`. */
function fillPattern (rng: Rng, pattern: string): string {
  let out = ''
  for (const c of pattern) {
    out += c === '#' ? String(rng.int(0, 9)) : c === 'A' ? String.fromCharCode(65 + rng.int(0, 25)) : c
  }
  return out
}

const digits = (rng: Rng, count: number): string => fillPattern(rng, '#'.repeat(count))

/** `count` distinct ids in 1..max (max may be 100 000: no list is built), ascending, never `except`. */
function distinctIds (rng: Rng, max: number, count: number, except?: number): number[] {
  const ids = new Set<number>()
  const wanted = Math.min(count, max - (except === undefined ? 0 : 1))
  while (ids.size < wanted) {
    const id = rng.int(1, max)
    if (id !== except) ids.add(id)
  }
  return [...ids].sort((a, b) => a - b)
}

export function seedUser (seed: number, id: number): User {
  const rng = recordRng(seed, SALT.user, id)
  const firstName = rng.pick(FIRST_NAMES)
  const lastName = rng.pick(LAST_NAMES)
  const city = rng.pick(CITIES)
  const { created, updated } = createdAndUpdated(rng)
  const phoneKinds = rng.sample(PHONE_KINDS, rng.int(1, 2))
  return {
    id,
    first_name: firstName,
    last_name: lastName,
    email: `${firstName}.${lastName}.${id}@example.com`.toLowerCase(),
    job_title: rng.chance(0.9) ? rng.pick(JOB_TITLES) : null,
    is_active: rng.chance(0.92),
    home_address: {
      street_line_1: `${rng.int(1, 240)} ${rng.pick(STREETS)}`,
      street_line_2: rng.chance(0.3) ? `${rng.pick(STREET_LINE_2)} ${rng.int(1, 60)}` : null,
      postal_code: fillPattern(rng, city.postalFormat),
      city: city.name,
      country_code: city.countryCode
    },
    phone_numbers: phoneKinds.map((kind) => ({ kind, number: `${city.phonePrefix} ${digits(rng, 7)}` })),
    team_ids: distinctIds(rng, TEAMS, rng.int(0, 3)),
    preferences: {
      time_zone: city.timeZone,
      ui_theme: rng.pick(UI_THEMES),
      email_notifications: { daily_digest: rng.chance(0.5), mentions: rng.chance(0.85) }
    },
    last_login_at: rng.chance(0.12) ? null : iso(updated + rng.int(60, 90 * 86_400) * SECOND_MS),
    created_at: iso(created),
    updated_at: iso(updated)
  }
}

export function seedTask (seed: number, id: number, users: number): Task {
  const rng = recordRng(seed, SALT.task, id)
  const status = rng.pick(TASK_STATUSES)
  const { created, updated } = createdAndUpdated(rng)
  return {
    id,
    title: `${rng.pick(TASK_VERBS)} ${rng.pick(TASK_OBJECTS)}`,
    status,
    priority: rng.pick(TASK_PRIORITIES),
    assignee_id: rng.chance(0.1) ? null : rng.int(1, users),
    due_on: rng.chance(0.2) ? null : day(created + rng.int(1, 120) * DAY_MS),
    tags: rng.sample(TASK_TAGS, rng.int(0, 3)),
    checklist_items: rng.sample(CHECKLIST_LABELS, rng.int(0, 4))
      .map((label) => ({ label, is_done: status === 'done' || rng.chance(0.4) })),
    created_at: iso(created),
    updated_at: iso(updated)
  }
}

const MEETINGS_FROM_MS = Date.UTC(2025, 0, 1)
const MEETING_MINUTES = [15, 30, 45, 60, 90] as const

function joinUrl (rng: Rng, provider: (typeof VIDEO_PROVIDERS)[number]): string {
  if (provider === 'zoom') return `https://zoom.example.com/j/${digits(rng, 10)}`
  if (provider === 'teams') return `https://teams.example.com/l/meetup-join/${digits(rng, 12)}`
  const code = fillPattern(rng, 'AAA-AAAA-AAA').toLowerCase()
  return `https://meet.example.com/${code}`
}

export function seedMeeting (seed: number, id: number, users: number): Meeting {
  const rng = recordRng(seed, SALT.meeting, id)
  const startsAt = MEETINGS_FROM_MS + rng.int(0, 729) * DAY_MS + rng.int(8, 17) * 3_600_000 + rng.pick([0, 15, 30, 45]) * 60_000
  const created = startsAt - rng.int(1, 30) * DAY_MS
  const organizerId = rng.int(1, users)
  // 0: in a room only, 1: video only, 2: both. Never neither.
  const mode = rng.int(0, 2)
  const provider = rng.pick(VIDEO_PROVIDERS)
  return {
    id,
    title: rng.pick(MEETING_TITLES),
    starts_at: iso(startsAt),
    ends_at: iso(startsAt + rng.pick(MEETING_MINUTES) * 60_000),
    organizer_id: organizerId,
    attendee_ids: distinctIds(rng, users, rng.int(1, 8), organizerId),
    location: mode === 1 ? null : { room_name: rng.pick(ROOMS), floor_number: rng.int(0, 12) },
    video_call: mode === 0 ? null : { provider, join_url: joinUrl(rng, provider) },
    created_at: iso(created),
    updated_at: iso(rng.chance(0.5) ? created : created + rng.int(60, 86_400) * SECOND_MS)
  }
}
