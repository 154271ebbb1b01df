import t from 'tap'
import { ConfigError } from '../../common/config.js'
import { buildUpstreamMock } from '../../upstream-mock/app.js'
import { http } from '../helpers/http.js'
import { assertJson } from '../helpers/assert.js'
import { startUpstreamMock } from '../helpers/upstream-mock.js'

t.test('happy: the same size gives byte-identical bodies in two instances', async (t) => {
  const [a, b] = await Promise.all([startUpstreamMock(t, { users: 100 }), startUpstreamMock(t, { users: 100 })])
  for (const path of ['/users?page=3', '/tasks?page=2&per_page=7', '/meetings?per_page=500', '/users/42', '/gzip']) {
    const [first, second] = await Promise.all([http(`${a.url}${path}`), http(`${b.url}${path}`)])
    assertJson(t, first, 200, path)
    t.equal(first.text, second.text, `${path}: identical bytes`)
  }
  t.equal((await http(`${a.url}/users?page=3`)).text, (await http(`${a.url}/users?page=3`)).text, 'and on every call')
})

t.test('happy: the seed, not the clock, decides the data', async (t) => {
  const apps = await Promise.all([buildUpstreamMock({ users: 10, seed: 1, logLevel: 'silent' }), buildUpstreamMock({ users: 10, seed: 2, logLevel: 'silent' })])
  t.teardown(() => Promise.all(apps.map(async (app) => await app.close())))
  const [one, two] = await Promise.all(apps.map(async (app) => (await app.inject('/users/1')).body))
  t.not(one, two, 'another seed, other records')
  const smaller = await startUpstreamMock(t, { users: 10 })
  const larger = await startUpstreamMock(t, { users: 1000 })
  t.equal((await http(`${smaller.url}/users/7`)).text, (await http(`${larger.url}/users/7`)).text,
    'a user does not depend on how many others there are')
})

t.test('happy: sizes follow users (tasks 2×, meetings ½×)', async (t) => {
  for (const users of [10, 101]) {
    const { url } = await startUpstreamMock(t, { users })
    const totals = await Promise.all(['users', 'tasks', 'meetings'].map(async (r) => (await http(`${url}/${r}?per_page=1`)).body.meta.total_count))
    t.same(totals, [users, 2 * users, Math.floor(users / 2)], `${users} users`)
  }
})

t.test('happy: 100 000 users build fast and every page is reachable', async (t) => {
  const started = performance.now()
  const { url } = await startUpstreamMock(t, { users: 100_000 })
  const builtMs = performance.now() - started
  t.ok(builtMs < 2000, 'built and listening in under 2 s', { builtMs })
  const last = await http(`${url}/users?page=200&per_page=500`)
  assertJson(t, last, 200)
  t.same(last.body.meta, { page: 200, per_page: 500, total_count: 100_000, total_pages: 200 })
  t.same([last.body.users[0].id, last.body.users.at(-1).id], [99_501, 100_000], 'ids 99 501..100 000')
  t.equal(last.body.users.length, 500)
  t.match((await http(`${url}/tasks/200000`)).body, { id: 200_000 }, 'the last task')
  t.match((await http(`${url}/meetings/50000`)).body, { id: 50_000 }, 'the last meeting')
})

t.test('happy: records are realistic and users weigh 500–900 bytes', async (t) => {
  const { url } = await startUpstreamMock(t, { users: 500 })
  const users = (await http(`${url}/users?per_page=500`)).body.users as Array<Record<string, unknown>>
  const sizes = users.map((u) => JSON.stringify(u).length)
  t.ok(Math.min(...sizes) >= 500 && Math.max(...sizes) <= 900, 'every user is 500–900 bytes', { min: Math.min(...sizes), max: Math.max(...sizes) })
  t.match(users[0], {
    id: 1,
    first_name: String,
    last_name: String,
    email: /^[a-z]+\.[a-z]+\.1@example\.com$/,
    is_active: Boolean,
    home_address: { street_line_1: String, postal_code: String, city: String, country_code: /^[A-Z]{2}$/ },
    phone_numbers: [{ kind: /^(mobile|work|home)$/, number: /^\+\d/ }],
    team_ids: Array,
    preferences: { time_zone: String, ui_theme: /^(light|dark|system)$/, email_notifications: { daily_digest: Boolean, mentions: Boolean } },
    created_at: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/,
    updated_at: String
  })
  t.ok(users.some((u) => u.job_title === null) && users.some((u) => u.last_login_at === null), 'nullable members are sometimes null')
  t.ok(users.some((u) => (u.home_address as { street_line_2: unknown }).street_line_2 === null), 'street_line_2 is sometimes null')
  const meetings = (await http(`${url}/meetings?per_page=250`)).body.meetings as Array<Record<string, unknown>>
  t.ok(meetings.some((m) => m.video_call === null) && meetings.some((m) => m.location === null), 'some meetings are in a room only, some online only')
  t.ok(meetings.every((m) => m.video_call !== null || m.location !== null), 'every meeting happens somewhere')
  t.ok(meetings.every((m) => !(m.attendee_ids as number[]).includes(m.organizer_id as number)), 'the organizer is not listed as an attendee')
  const tasks = (await http(`${url}/tasks?per_page=500`)).body.tasks as Array<Record<string, unknown>>
  t.ok(tasks.every((task) => task.assignee_id === null || (task.assignee_id as number) <= 500), 'tasks are assigned to existing users')
})

t.test('error: options outside 10..100 000 users are refused at build', async (t) => {
  for (const users of [9, 100_001, 10.5]) {
    await t.rejects(buildUpstreamMock({ users, logLevel: 'silent' }), ConfigError, `${users} users`)
  }
  const error = await buildUpstreamMock({ users: 9, logLevel: 'loud' }).catch((err: unknown) => err)
  t.match(error, { problems: [/^options\.users: /, /^options\.logLevel: must be one of /] }, 'every problem listed')
})
