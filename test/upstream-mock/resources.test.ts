import t from 'tap'
import { http } from '../helpers/http.js'
import { assertJson, assertProblem } from '../helpers/assert.js'
import { startUpstreamMock } from '../helpers/upstream-mock.js'

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

/** Per resource: a minimal create body, the defaults it gets, a full patch, and a nested member no schema knows. */
const cases = [
  {
    plural: 'users',
    singular: 'user',
    create: { first_name: 'Grace', last_name: 'Hopper', email: 'grace.hopper@example.com' },
    defaults: {
      job_title: null,
      is_active: true,
      home_address: null,
      phone_numbers: [],
      team_ids: [],
      preferences: { time_zone: 'UTC', ui_theme: 'system', email_notifications: { daily_digest: true, mentions: true } },
      last_login_at: null
    },
    patch: {
      job_title: 'Rear Admiral',
      home_address: { street_line_1: '1 Navy Yard', street_line_2: null, postal_code: '20374', city: 'Washington', country_code: 'US' },
      phone_numbers: [{ kind: 'work', number: '+1 202 5550100' }]
    },
    nestedUnknown: { preferences: { time_zone: 'UTC', ui_theme: 'dark', email_notifications: { daily_digest: true, mentions: true, sms: true } } },
    wrongType: { first_name: 42 }
  },
  {
    plural: 'tasks',
    singular: 'task',
    create: { title: 'File the quarterly report' },
    defaults: { status: 'todo', priority: 'normal', assignee_id: null, due_on: null, tags: [], checklist_items: [] },
    patch: { status: 'done', checklist_items: [{ label: 'Send it', is_done: true }], tags: ['finance'] },
    nestedUnknown: { checklist_items: [{ label: 'x', is_done: false, owner: 3 }] },
    wrongType: { due_on: 'next tuesday' }
  },
  {
    plural: 'meetings',
    singular: 'meeting',
    create: { title: 'Kick-off', starts_at: '2026-03-02T09:00:00.000Z', ends_at: '2026-03-02T09:30:00.000Z', organizer_id: 3 },
    defaults: { attendee_ids: [], location: null, video_call: null },
    patch: { location: { room_name: 'Atlas', floor_number: 2 }, video_call: { provider: 'zoom', join_url: 'https://zoom.example.com/j/1234567890' } },
    nestedUnknown: { location: { room_name: 'Atlas', floor_number: 2, building: 'B' } },
    wrongType: { attendee_ids: [1, 1] }
  }
] as const

t.test('happy: paging meta and bounds', async (t) => {
  const { url } = await startUpstreamMock(t, { users: 120 })
  const first = await http(`${url}/users`)
  assertJson(t, first, 200, 'defaults')
  t.same(first.body.meta, { page: 1, per_page: 50, total_count: 120, total_pages: 3 })
  t.same(first.body.users.map((u: { id: number }) => u.id), Array.from({ length: 50 }, (_, i) => i + 1), 'ids 1..50 in order')
  const last = await http(`${url}/users?page=3&per_page=50`)
  t.same(last.body.users.map((u: { id: number }) => u.id), Array.from({ length: 20 }, (_, i) => i + 101), 'a short last page')
  const beyond = await http(`${url}/users?page=4`)
  assertJson(t, beyond, 200, 'past the end')
  t.same(beyond.body, { users: [], meta: { page: 4, per_page: 50, total_count: 120, total_pages: 3 } }, 'an empty page, not an error')
  t.same((await http(`${url}/tasks?per_page=500`)).body.meta, { page: 1, per_page: 500, total_count: 240, total_pages: 1 }, 'per_page 500 is allowed')
  t.same((await http(`${url}/meetings?per_page=1&page=60`)).body.meta, { page: 60, per_page: 1, total_count: 60, total_pages: 60 })
  t.same(Object.keys(first.body), ['users', 'meta'], 'list member named after the resource')
})

t.test('error: bad paging is a 400 problem naming the parameter', async (t) => {
  const { url } = await startUpstreamMock(t, { users: 10 })
  for (const query of ['page=0', 'page=-1', 'page=abc', 'page=1.5', 'per_page=0', 'per_page=501', 'per_page=ten']) {
    for (const plural of ['users', 'tasks', 'meetings']) {
      const answer = await http(`${url}/${plural}?${query}`)
      assertProblem(t, answer, 400, 'validation_failed', `${plural}?${query}`)
      t.match(answer.body.errors, [{ path: /^querystring\/(page|per_page)$/ }], `${plural}?${query}: names the parameter`)
    }
  }
})

for (const c of cases) {
  t.test(`happy: ${c.plural} read, create, update`, async (t) => {
    const { url } = await startUpstreamMock(t, { users: 10 })
    const total = (await http(`${url}/${c.plural}?per_page=1`)).body.meta.total_count as number
    const shown = await http(`${url}/${c.plural}/2`)
    assertJson(t, shown, 200, 'show')
    t.equal(shown.body.id, 2)
    t.same(shown.body, (await http(`${url}/${c.plural}?page=2&per_page=1`)).body[c.plural][0], 'show and list agree')

    const created = await http(`${url}/${c.plural}`, { body: c.create })
    assertJson(t, created, 201, 'create')
    t.equal(created.headers.location, `/${c.plural}/${total + 1}`, 'Location of the new record')
    t.same(created.body, { id: total + 1, ...c.create, ...c.defaults, created_at: created.body.created_at, updated_at: created.body.created_at },
      'the server assigns id and timestamps and fills the defaults')
    t.match(created.body.created_at, ISO)
    t.ok(Math.abs(Date.parse(created.body.created_at as string) - Date.now()) < 60_000, 'created now')
    t.same((await http(`${url}/${c.plural}/${total + 1}`)).body, created.body, 'kept in memory')
    t.equal((await http(`${url}/${c.plural}?per_page=1`)).body.meta.total_count, total + 1, 'counted in the list')
    const second = await http(`${url}/${c.plural}`, { body: c.create })
    t.equal(second.body.id, total + 2, 'ids keep growing')

    const patched = await http(`${url}/${c.plural}/${total + 1}`, { method: 'PATCH', body: c.patch })
    assertJson(t, patched, 200, 'patch')
    t.same(patched.body, { ...created.body, ...c.patch, updated_at: patched.body.updated_at }, 'only the named members change')
    t.ok(patched.body.updated_at >= created.body.updated_at, 'updated_at moves forward')
    t.same((await http(`${url}/${c.plural}/${total + 1}`)).body, patched.body, 'the change is kept')

    const seededPatch = await http(`${url}/${c.plural}/1`, { method: 'PATCH', body: c.patch })
    assertJson(t, seededPatch, 200, 'patch a seeded record')
    t.same((await http(`${url}/${c.plural}?per_page=1`)).body[c.plural][0], seededPatch.body, 'lists show the changed seeded record')
    t.same((await http(`${url}/${c.plural}?per_page=1`)).body.meta.total_count, total + 2, 'patching creates nothing')
  })

  t.test(`error: ${c.plural} unknown ids, invalid ids and invalid bodies`, async (t) => {
    const { url } = await startUpstreamMock(t, { users: 10 })
    const total = (await http(`${url}/${c.plural}?per_page=1`)).body.meta.total_count as number
    const missing = await http(`${url}/${c.plural}/${total + 1}`)
    assertProblem(t, missing, 404, 'resource_not_found', 'show past the last id')
    t.equal(missing.body.detail, `No ${c.singular} has id ${total + 1}.`)
    assertProblem(t, await http(`${url}/${c.plural}/${total + 1}`, { method: 'PATCH', body: c.patch }), 404, 'resource_not_found', 'patch an unknown id')
    for (const id of ['0', 'abc', '1.5', '-3', '99999999999']) {
      assertProblem(t, await http(`${url}/${c.plural}/${id}`), 400, 'validation_failed', `id ${id}`)
    }

    const bodies: Array<[string, unknown]> = [
      ['an unknown member', { ...c.create, favourite_colour: 'teal' }],
      ['a nested unknown member', { ...c.create, ...c.nestedUnknown }],
      ['an invalid value (bodies are never coerced)', { ...c.create, ...c.wrongType }],
      ['a server-written member', { ...c.create, id: 77 }],
      ['a missing required member', Object.fromEntries(Object.entries(c.create).slice(1))]
    ]
    for (const [label, body] of bodies) {
      assertProblem(t, await http(`${url}/${c.plural}`, { body }), 400, 'validation_failed', `create with ${label}`)
    }
    for (const [label, body] of [...bodies.slice(0, 4), ['nothing to change', {}]] as Array<[string, unknown]>) {
      assertProblem(t, await http(`${url}/${c.plural}/1`, { method: 'PATCH', body }), 400, 'validation_failed', `patch with ${label}`)
    }
    assertProblem(t, await http(`${url}/${c.plural}`, { body: '{"title":', headers: { 'content-type': 'application/json' } }), 400, 'malformed_json')
    assertProblem(t, await http(`${url}/${c.plural}`, { body: 'title=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415, 'unsupported_media_type')
    t.equal((await http(`${url}/${c.plural}?per_page=1`)).body.meta.total_count, total, 'nothing was created')
    t.same((await http(`${url}/${c.plural}/1`)).body.updated_at, (await startUpstreamMock(t, { users: 10 }).then(async (m) => await http(`${m.url}/${c.plural}/1`))).body.updated_at,
      'nothing was changed')
  })
}

t.test('happy: written data lives in one instance only', async (t) => {
  const a = await startUpstreamMock(t, { users: 10 })
  await http(`${a.url}/users/1`, { method: 'PATCH', body: { job_title: 'Changed' } })
  const b = await startUpstreamMock(t, { users: 10 })
  t.not((await http(`${b.url}/users/1`)).body.job_title, 'Changed', 'a fresh instance starts from the seed')
})
