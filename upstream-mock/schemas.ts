import { Type, type Static, type TSchema } from 'typebox'

/**
 * The three resources as JSON schemas, snake_case like the back-office services
 * Portier fronts. Each resource lists its writable fields once; the create and patch
 * bodies are derived from them (closed: an unknown member is a 400), and the record
 * adds what only the server writes (id, timestamps).
 */
const closed = { additionalProperties: false } as const

/**
 * `type: [T, "null"]` rather than `anyOf`: Ajv and fast-json-stringify handle it
 * without compiling a sub-validator per branch, which makes building an instance
 * several times faster (tests build many).
 */
const nullable = <T extends TSchema & { type: string }>(schema: T) =>
  Type.Unsafe<Static<T> | null>({ ...schema, type: [schema.type, 'null'] })
const text = (maxLength: number) => Type.String({ minLength: 1, maxLength })

export const RecordId = Type.Integer({ minimum: 1, maximum: 2_147_483_647 })
export const Timestamp = Type.String({ format: 'date-time' })
const CalendarDate = Type.String({ format: 'date' })
const IdList = Type.Array(RecordId, { maxItems: 200, uniqueItems: true })

export const PHONE_KINDS = ['mobile', 'work', 'home'] as const
export const UI_THEMES = ['light', 'dark', 'system'] as const
export const TASK_STATUSES = ['todo', 'in_progress', 'blocked', 'done'] as const
export const TASK_PRIORITIES = ['low', 'normal', 'high', 'urgent'] as const
export const VIDEO_PROVIDERS = ['zoom', 'google_meet', 'teams'] as const

// Enums carry their type so the response serializer need not guess it.
const stringEnum = <T extends readonly string[]>(values: T) => Type.Enum(values, { type: 'string' })

const HomeAddress = Type.Object({
  street_line_1: text(200),
  street_line_2: nullable(text(200)),
  postal_code: text(20),
  city: text(100),
  country_code: Type.String({ pattern: '^[A-Z]{2}$' })
}, closed)

const PhoneNumber = Type.Object({
  kind: stringEnum(PHONE_KINDS),
  number: Type.String({ pattern: '^\\+[0-9][0-9 ]{5,24}$' })
}, closed)

const Preferences = Type.Object({
  time_zone: text(64),
  ui_theme: stringEnum(UI_THEMES),
  email_notifications: Type.Object({ daily_digest: Type.Boolean(), mentions: Type.Boolean() }, closed)
}, closed)

export const UserFields = {
  first_name: text(100),
  last_name: text(100),
  email: Type.String({ format: 'email', maxLength: 254 }),
  job_title: nullable(text(100)),
  is_active: Type.Boolean(),
  home_address: nullable(HomeAddress),
  phone_numbers: Type.Array(PhoneNumber, { maxItems: 10 }),
  team_ids: IdList,
  preferences: Preferences
}

/** A stored record: the fields a client may write, plus what the server writes. */
function storedRecord<Fields extends Record<string, TSchema>> (fields: Fields) {
  return Type.Object({ id: RecordId, ...fields, created_at: Timestamp, updated_at: Timestamp })
}

export const User = storedRecord({ ...UserFields, last_login_at: nullable(Timestamp) })
export type User = Static<typeof User>

const ChecklistItem = Type.Object({ label: text(200), is_done: Type.Boolean() }, closed)

export const TaskFields = {
  title: text(200),
  status: stringEnum(TASK_STATUSES),
  priority: stringEnum(TASK_PRIORITIES),
  assignee_id: nullable(RecordId),
  due_on: nullable(CalendarDate),
  tags: Type.Array(text(40), { maxItems: 20, uniqueItems: true }),
  checklist_items: Type.Array(ChecklistItem, { maxItems: 50 })
}

export const Task = storedRecord(TaskFields)
export type Task = Static<typeof Task>

const Location = Type.Object({ room_name: text(100), floor_number: Type.Integer({ minimum: -10, maximum: 200 }) }, closed)
const VideoCall = Type.Object({
  provider: stringEnum(VIDEO_PROVIDERS),
  join_url: Type.String({ format: 'uri', maxLength: 500 })
}, closed)

export const MeetingFields = {
  title: text(200),
  starts_at: Timestamp,
  ends_at: Timestamp,
  organizer_id: RecordId,
  attendee_ids: IdList,
  location: nullable(Location),
  video_call: nullable(VideoCall)
}

export const Meeting = storedRecord(MeetingFields)
export type Meeting = Static<typeof Meeting>

/** POST body: the `required` fields must be present, the rest get the resource's defaults. */
export function createBodySchema (fields: Record<string, TSchema>, required: readonly string[]) {
  const properties: Record<string, TSchema> = {}
  for (const [name, schema] of Object.entries(fields)) {
    properties[name] = required.includes(name) ? schema : Type.Optional(schema)
  }
  return Type.Object(properties, closed)
}

/** PATCH body: any non-empty subset of the fields; each one named is replaced whole. */
export function patchBodySchema (fields: Record<string, TSchema>) {
  return Type.Partial(Type.Object(fields), { ...closed, minProperties: 1 })
}

export const DEFAULT_PER_PAGE = 50
export const MAX_PER_PAGE = 500

export const PageQuery = Type.Object({
  page: Type.Integer({ minimum: 1, maximum: 1_000_000_000, default: 1 }),
  per_page: Type.Integer({ minimum: 1, maximum: MAX_PER_PAGE, default: DEFAULT_PER_PAGE })
})

export const PageMeta = Type.Object({
  page: Type.Integer(),
  per_page: Type.Integer(),
  total_count: Type.Integer(),
  total_pages: Type.Integer()
})

export const IdParams = Type.Object({ id: RecordId }, closed)
