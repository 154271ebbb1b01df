import t, { type Test } from 'tap'
import { lookupIdOf, randomLookupId } from '../../common/api-key-format.js'
import { MAX_USAGE_BUCKETS } from '../../identity/services/key-usage.js'
import { assertJson, assertProblem } from '../helpers/assert.js'
import { START, iso } from '../helpers/identity.js'
import { keyHelpers, postKeyUsage, startWithAdmin, usageReport, type AdminSetup, type KeyHelpers, type TestUse } from '../helpers/session-setup.js'

/**
 * Usage over time at identity: the hourly outcomes gateways report (POST
 * /internal/keys/usage, `hours`) kept per key and UTC hour, in the same transaction as
 * the use counts and once per batch id, forgotten after IDENTITY_USAGE_RETENTION_DAYS,
 * and shown by GET /admin/keys/{id}/usage per hour or per day, zero-filled, with totals.
 * The gateways' side, end to end, is test/gateway/usage-over-time.test.ts.
 */

const HOUR_MS = 3_600_000
const DAY_MS = 86_400_000

interface TestHour { key: string, at: number, allowed?: number, forbidden?: number, rate_limited?: number, quota_exhausted?: number, upstream_error?: number }

const hourEntry = (hour: TestHour): Record<string, unknown> => ({
  lookup_id: lookupIdOf(hour.key),
  hour_start: iso(hour.at),
  allowed: hour.allowed ?? 0,
  forbidden: hour.forbidden ?? 0,
  rate_limited: hour.rate_limited ?? 0,
  quota_exhausted: hour.quota_exhausted ?? 0,
  upstream_error: hour.upstream_error ?? 0
})

/** A report as a gateway of this version sends it: the uses, and the hours. */
const report = (uses: TestUse[], hours: TestHour[]): Record<string, unknown> => ({ ...usageReport(uses), hours: hours.map(hourEntry) })

type Setup = AdminSetup & KeyHelpers & {
  send: (body: Record<string, unknown>) => Promise<Record<string, unknown>>
  usage: (id: string, query?: string) => Promise<Record<string, any>>
  view: (id: string) => Promise<Record<string, any>>
  keyId: string
  key: string
}

async function setup (t: Test, env: Record<string, string> = {}): Promise<Setup> {
  const s = await startWithAdmin(t, env)
  const helpers = keyHelpers(t, s)
  const { id, key } = await helpers.create({ name: 'k', permissions: ['users:list'], expires_at: iso(START + 200 * DAY_MS) })
  return {
    ...s,
    ...helpers,
    keyId: id,
    key,
    async send (body) {
      const answer = await postKeyUsage(s, body)
      assertJson(t, answer, 200, 'usage report')
      return answer.body
    },
    view: async (keyId) => (await s.admin('GET', `/admin/keys/${keyId}`)).body.api_key,
    async usage (keyId, query = '') {
      const answer = await s.admin('GET', `/admin/keys/${keyId}/usage${query}`)
      assertJson(t, answer, 200, `usage ${query}`)
      t.equal(answer.headers['cache-control'], 'no-store')
      return answer.body
    }
  }
}

const zero = { allowed: 0, forbidden: 0, rate_limited: 0, quota_exhausted: 0, upstream_error: 0, total: 0 }

t.test('hour boundaries: each request in the hour it was counted in, whichever report brings it', async (t) => {
  const s = await setup(t)
  s.clock.advance(3 * HOUR_MS)
  await s.send(report([{ key: s.key, count: 3, at: START + 59 * 60_000 }], [
    { key: s.key, at: START, allowed: 2, forbidden: 1 },
    { key: s.key, at: START + HOUR_MS, allowed: 1, rate_limited: 4, upstream_error: 1 }
  ]))
  // Another gateway's report of the same hours: added, and an hour start inside the hour is taken as the hour.
  await s.send(report([], [{ key: s.key, at: START + HOUR_MS + 59 * 60_000 + 59_999, quota_exhausted: 2 }]))
  const usage = await s.usage(s.keyId, `?from=${iso(START)}&to=${iso(START + 3 * HOUR_MS)}&step=hour`)
  t.same(usage, {
    key_id: s.keyId,
    step: 'hour',
    from: iso(START),
    to: iso(START + 3 * HOUR_MS),
    buckets: [
      { start: iso(START), ...zero, allowed: 2, forbidden: 1, total: 3 },
      { start: iso(START + HOUR_MS), ...zero, allowed: 1, rate_limited: 4, quota_exhausted: 2, upstream_error: 1, total: 7 },
      { start: iso(START + 2 * HOUR_MS), ...zero }
    ],
    totals: { allowed: 3, forbidden: 1, rate_limited: 4, quota_exhausted: 2, upstream_error: 1, total: 10 }
  }, 'zero-filled; the total counts the requests seen: an upstream error is one of the allowed')
  t.match(await s.view(s.keyId), { secrets: [{ use_count: 3 }] }, 'the use count as before, from the uses')

  const inside = await s.usage(s.keyId, `?from=${iso(START + 30 * 60_000)}&to=${iso(START + HOUR_MS + 1)}`)
  t.same([inside.from, inside.to, inside.buckets.length], [iso(START), iso(START + 2 * HOUR_MS), 2], 'a range is widened to whole buckets; the step is an hour by default')
})

t.test('a report of an older gateway (uses, no hours): its uses count as allowed in the hour of their last use', async (t) => {
  const s = await setup(t)
  s.clock.advance(2 * HOUR_MS)
  await s.send(usageReport([{ key: s.key, count: 5, at: START + HOUR_MS + 10 }]))
  const usage = await s.usage(s.keyId, `?from=${iso(START)}&to=${iso(START + 2 * HOUR_MS)}`)
  t.same(usage.buckets.map((b: { allowed: number }) => b.allowed), [0, 5])
})

t.test('day step: the hours of each UTC day added up; defaults: the last 24 hours, the last 30 days', async (t) => {
  const s = await setup(t)
  s.clock.advance(2 * DAY_MS + 5 * HOUR_MS + 17 * 60_000) // day 3, 05:17
  await s.send(report([], [
    { key: s.key, at: START + 23 * HOUR_MS, allowed: 4 },
    { key: s.key, at: START + DAY_MS, allowed: 1, forbidden: 1 },
    { key: s.key, at: START + DAY_MS + 23 * HOUR_MS, rate_limited: 2 },
    { key: s.key, at: START + 2 * DAY_MS + 5 * HOUR_MS, allowed: 7 }
  ]))
  const days = await s.usage(s.keyId, `?from=${iso(START)}&to=${iso(START + 3 * DAY_MS)}&step=day`)
  t.same(days.buckets, [
    { start: iso(START), ...zero, allowed: 4, total: 4 },
    { start: iso(START + DAY_MS), ...zero, allowed: 1, forbidden: 1, rate_limited: 2, total: 4 },
    { start: iso(START + 2 * DAY_MS), ...zero, allowed: 7, total: 7 }
  ])
  t.same(days.totals, { ...zero, allowed: 12, forbidden: 1, rate_limited: 2, total: 15 })

  const lastHours = await s.usage(s.keyId)
  t.equal(lastHours.buckets.length, 24, 'no range: 24 hourly buckets')
  t.equal(lastHours.to, iso(START + 2 * DAY_MS + 6 * HOUR_MS), 'the last is the current hour')
  t.same(lastHours.buckets.at(-1), { start: iso(START + 2 * DAY_MS + 5 * HOUR_MS), ...zero, allowed: 7, total: 7 })
  t.equal(lastHours.totals.total, 9, 'the last 24 hours: from 06:00 of day 2')
  const lastDays = await s.usage(s.keyId, '?step=day')
  t.equal(lastDays.buckets.length, 30, 'no range: 30 daily buckets')
  t.same([lastDays.from, lastDays.to], [iso(START - 27 * DAY_MS), iso(START + 3 * DAY_MS)], 'the last is today')
  t.equal(lastDays.totals.total, 15)
})

t.test('a batch applied once: the hours of a report sent again are not counted twice', async (t) => {
  const s = await setup(t)
  s.clock.advance(HOUR_MS)
  const sent = report([{ key: s.key, count: 2, at: START }], [{ key: s.key, at: START, allowed: 2, forbidden: 3 }])
  await s.send(sent)
  t.same(await s.send(sent), { applied: 0, unknown: 0, duplicate: true })
  const usage = await s.usage(s.keyId, `?from=${iso(START)}&to=${iso(START + HOUR_MS)}`)
  t.same(usage.totals, { ...zero, allowed: 2, forbidden: 3, total: 5 })
  t.match(await s.view(s.keyId), { secrets: [{ use_count: 2 }] })
})

t.test('a rotated key: the hours of both its secrets are the key\'s', async (t) => {
  const s = await setup(t)
  const rotated = await s.admin('POST', `/admin/keys/${s.keyId}/rotate`)
  const newKey = rotated.body.key as string
  await s.send(report([], [{ key: s.key, at: START, allowed: 2 }, { key: newKey, at: START, allowed: 3, forbidden: 1 }]))
  t.same((await s.usage(s.keyId, `?from=${iso(START)}&to=${iso(START + HOUR_MS)}`)).totals, { ...zero, allowed: 5, forbidden: 1, total: 6 })
})

t.test('an hour ahead of identity\'s clock is the current hour; an unknown lookup id is skipped', async (t) => {
  const s = await setup(t)
  s.clock.advance(HOUR_MS + 5)
  await s.send(report([], [{ key: s.key, at: START + 10 * HOUR_MS, forbidden: 1 }, { key: `ptk_${randomLookupId()}_`, at: START, forbidden: 9 }]))
  const usage = await s.usage(s.keyId, `?from=${iso(START)}&to=${iso(START + 12 * HOUR_MS)}`)
  t.same(usage.buckets.map((b: { forbidden: number }) => b.forbidden), [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
  t.equal(s.identity.db.prepare('SELECT count(*) FROM key_usage_hourly').pluck().get(), 1, 'nothing kept for a lookup id no secret has')
})

t.test('retention: hours older than IDENTITY_USAGE_RETENTION_DAYS are forgotten when reports arrive, at most hourly', async (t) => {
  const s = await setup(t, { IDENTITY_USAGE_RETENTION_DAYS: '2' })
  const rows = (): number[] => s.identity.db.prepare('SELECT hour_start FROM key_usage_hourly ORDER BY hour_start').pluck().all() as number[]
  await s.send(report([], [{ key: s.key, at: START, allowed: 1 }]))
  s.clock.advance(2 * DAY_MS - 30 * 60_000)
  await s.send(report([], [{ key: s.key, at: START + DAY_MS, allowed: 1 }]))
  t.same(rows(), [START, START + DAY_MS], 'both within the two days')

  s.clock.advance(45 * 60_000) // the first hour is now beyond the retention
  await s.send(report([], [{ key: s.key, at: START + DAY_MS + HOUR_MS, allowed: 1 }]))
  t.same(rows(), [START, START + DAY_MS, START + DAY_MS + HOUR_MS], 'kept a little longer: the last pruning was less than an hour ago')
  s.clock.advance(HOUR_MS)
  await s.send(report([], [
    { key: s.key, at: START + 2 * DAY_MS, allowed: 1 },
    { key: s.key, at: START + HOUR_MS, allowed: 1 } // beyond the retention already: not kept
  ]))
  t.same(rows(), [START + DAY_MS, START + DAY_MS + HOUR_MS, START + 2 * DAY_MS], 'forgotten with the next report an hour on')
})

t.test('error: a range that is not one, too many buckets, a bad step, an unknown key → problem+json', async (t) => {
  const s = await setup(t)
  const ask = async (query: string) => await s.admin('GET', `/admin/keys/${s.keyId}/usage${query}`)
  assertProblem(t, await ask(`?from=${iso(START + HOUR_MS)}&to=${iso(START)}`), 400, 'validation_failed', 'from after to')
  assertProblem(t, await ask(`?from=${iso(START)}&to=${iso(START)}`), 400, 'validation_failed', 'from equal to to')
  t.match((await ask(`?from=${iso(START + HOUR_MS)}&to=${iso(START)}`)).body.errors, [{ path: 'querystring/from', message: 'must be before to' }], 'named')
  assertProblem(t, await ask(`?from=${iso(START + 2 * HOUR_MS)}`), 400, 'validation_failed', 'a from after now, without to')
  assertProblem(t, await ask(`?from=${iso(START)}&to=${iso(START + (MAX_USAGE_BUCKETS + 1) * HOUR_MS)}`), 400, 'validation_failed', `${MAX_USAGE_BUCKETS + 1} hours`)
  assertProblem(t, await ask(`?from=${iso(START)}&to=${iso(START + (MAX_USAGE_BUCKETS + 1) * DAY_MS)}&step=day`), 400, 'validation_failed', `${MAX_USAGE_BUCKETS + 1} days`)
  assertJson(t, await ask(`?from=${iso(START)}&to=${iso(START + MAX_USAGE_BUCKETS * HOUR_MS)}`), 200, `${MAX_USAGE_BUCKETS} hours: the most`)
  assertProblem(t, await ask('?step=week'), 400, 'validation_failed', 'a step that is not hour or day')
  assertProblem(t, await ask('?from=yesterday'), 400, 'validation_failed', 'a from that is not a date-time')
  assertProblem(t, await ask('?bucket=hour'), 400, 'validation_failed', 'an unknown parameter')
  assertProblem(t, await s.admin('GET', '/admin/keys/key_nothing/usage'), 404, 'key_not_found', 'an unknown key')
  const anonymous = await fetch(`${s.adminUrl}/admin/keys/${s.keyId}/usage`)
  t.equal(anonymous.status, 401, 'no credential: refused')
})

t.test('error: a report with neither uses nor hours is refused whole', async (t) => {
  const s = await setup(t)
  assertProblem(t, await postKeyUsage(s, { ...usageReport([]), hours: [] }), 400, 'validation_failed', 'both empty')
  assertProblem(t, await postKeyUsage(s, { ...report([], [{ key: s.key, at: START, allowed: -1 }]) }), 400, 'validation_failed', 'a negative count')
  assertProblem(t, await postKeyUsage(s, { ...report([], [{ key: s.key, at: START }]), hours: [{ ...hourEntry({ key: s.key, at: START }), extra: 1 }] }),
    400, 'validation_failed', 'an unknown member in an hour')
  assertProblem(t, await postKeyUsage(s, { ...report([], []), hours: Array(501).fill(hourEntry({ key: s.key, at: START, allowed: 1 })) }),
    400, 'validation_failed', '501 hours')
  t.equal(s.identity.db.prepare('SELECT count(*) FROM key_usage_hourly').pluck().get(), 0, 'nothing kept')
})

t.test('a from without to: up to the end of the current bucket, even at its very first instant', async (t) => {
  const s = await setup(t)
  s.clock.advance(DAY_MS) // exactly 00:00 of day 2: the first instant of an hour and of a day
  await s.send(report([], [{ key: s.key, at: s.clock.now(), allowed: 3 }]))
  const hours = await s.usage(s.keyId, `?from=${iso(START + DAY_MS - 2 * HOUR_MS)}`)
  t.same([hours.from, hours.to], [iso(START + DAY_MS - 2 * HOUR_MS), iso(START + DAY_MS + HOUR_MS)], 'the current hour is the last bucket')
  t.equal(hours.totals.allowed, 3, 'and its requests are counted')
  const days = await s.usage(s.keyId, `?from=${iso(START)}&step=day`)
  t.same([days.from, days.to, days.totals.allowed], [iso(START), iso(START + 2 * DAY_MS), 3], 'today is the last day')
  t.same((await s.usage(s.keyId)).to, hours.to, 'as without any range')
  assertJson(t, await s.admin('GET', `/admin/keys/${s.keyId}/usage?from=${iso(s.clock.now() + 1000)}`), 200, 'a from later in the current hour: that hour')
})

t.test('a time no Date holds (a leap second, which RFC 3339 allows): 400, never 500, in a query or a report', async (t) => {
  const s = await setup(t)
  s.clock.advance(HOUR_MS)
  const leap = '2025-12-31T23:59:60Z'
  assertProblem(t, await s.admin('GET', `/admin/keys/${s.keyId}/usage?from=${leap}`), 400, 'validation_failed', 'from')
  assertProblem(t, await s.admin('GET', `/admin/keys/${s.keyId}/usage?to=${leap}`), 400, 'validation_failed', 'to')
  const use = usageReport([{ key: s.key, count: 1, at: START }])
  assertProblem(t, await postKeyUsage(s, { ...use, uses: use.uses.map((u) => ({ ...u, last_used_at: leap })) }), 400, 'validation_failed', 'a use')
  assertProblem(t, await postKeyUsage(s, { ...report([], []), hours: [{ ...hourEntry({ key: s.key, at: START, allowed: 1 }), hour_start: leap }] }),
    400, 'validation_failed', 'an hour')
  t.equal(s.identity.db.prepare('SELECT count(*) FROM key_usage_hourly').pluck().get(), 0, 'nothing kept')
  await s.send(use)
  t.equal((await s.usage(s.keyId)).totals.allowed, 1, 'a batch refused for it was not claimed: sent again right, it counts')
})
