import t, { type Test } from 'tap'
import { QUOTA_USAGE_MAX_ENTRIES, QUOTA_USAGE_PATH } from '../../common/internal-api.js'
import { randomBase62 } from '../../common/random.js'
import { QUOTA_USAGE_BODY_LIMIT_BYTES } from '../../identity/routes/internal/quotas-usage.js'
import { ENDED_PERIOD_MEMORY_MS } from '../../identity/services/quotas.js'
import { assertJson, assertProblem } from '../helpers/assert.js'
import { http, type HttpAnswer } from '../helpers/http.js'
import { START } from '../helpers/identity.js'
import { startWithAdmin, type AdminSetup } from '../helpers/session-setup.js'

/**
 * POST /internal/quotas/usage: identity keeps the authoritative count of every quota
 * counter. A report's uses are added in one transaction, once per batch id; the answer
 * holds the totals of every counter the report names (uses, then reads, each once),
 * 0 for one never used. A report that breaks the contract anywhere is refused whole.
 */

const DAY_MS = 86_400_000
const MONTH = Date.parse('2026-01-01T00:00:00Z')
const NEXT_MONTH = Date.parse('2026-02-01T00:00:00Z')

interface Use { counter: string, period_start: number, count: number }
interface Read { counter: string, period_start: number }
interface Report { batch_id: string, uses: Use[], read: Read[] }

const report = (uses: Use[], read: Read[] = [], batchId = randomBase62(24)): Report => ({ batch_id: batchId, uses, read })

type Setup = AdminSetup & {
  /** POST the report with the service credential, unchecked. */
  post: (body: unknown) => Promise<HttpAnswer>
  /** POST the report; asserts a 200 JSON answer and returns it. */
  send: (body: Report) => Promise<Record<string, any>>
  /** Rows of quota_usage, as (counter, period_start, used). */
  rows: () => Array<[string, number, number]>
  batches: () => number
}

async function setup (t: Test, env: Record<string, string> = {}): Promise<Setup> {
  const s = await startWithAdmin(t, env)
  const post = async (body: unknown): Promise<HttpAnswer> => await http(`${s.adminUrl}${QUOTA_USAGE_PATH}`, { bearer: s.serviceToken, body })
  return {
    ...s,
    post,
    async send (body) {
      const answer = await post(body)
      assertJson(t, answer, 200, 'quota report')
      t.equal(answer.headers['cache-control'], 'no-store', 'totals are not cached by intermediaries')
      return answer.body
    },
    rows: () => (s.identity.db.prepare('SELECT counter, period_start, used FROM quota_usage ORDER BY counter, period_start').raw().all() as Array<[string, number, number]>),
    batches: () => s.identity.db.prepare('SELECT count(*) FROM quota_usage_batches').pluck().get() as number
  }
}

t.test('happy: uses add up per counter and period, and the answer holds every total named', async (t) => {
  const s = await setup(t)
  const first = await s.send(report([
    { counter: 'key|monthly|k:key_1', period_start: MONTH, count: 40 },
    { counter: 'key|monthly|k:key_1', period_start: MONTH, count: 2 },
    { counter: 'route:GET:/reports|daily|u:usr_9', period_start: MONTH, count: 1 }
  ], [
    { counter: 'key|monthly|k:key_2', period_start: MONTH },
    { counter: 'key|monthly|k:key_1', period_start: MONTH }
  ]))
  t.same(first, {
    duplicate: false,
    counters: [
      { counter: 'key|monthly|k:key_1', period_start: MONTH, used: 42 },
      { counter: 'route:GET:/reports|daily|u:usr_9', period_start: MONTH, used: 1 },
      { counter: 'key|monthly|k:key_2', period_start: MONTH, used: 0 }
    ]
  }, 'two uses of one counter add up; each counter is answered once; one never used is 0')

  const second = await s.send(report([
    { counter: 'key|monthly|k:key_1', period_start: MONTH, count: 8 },
    { counter: 'key|monthly|k:key_1', period_start: NEXT_MONTH, count: 3 },
    { counter: 'key|total|k:key_1', period_start: 0, count: 7 }
  ]))
  t.same(second.counters, [
    { counter: 'key|monthly|k:key_1', period_start: MONTH, used: 50 },
    { counter: 'key|monthly|k:key_1', period_start: NEXT_MONTH, used: 3 },
    { counter: 'key|total|k:key_1', period_start: 0, used: 7 }
  ], 'another gateway\'s report adds to the same count; another period counts apart')

  const readOnly = await s.send(report([], [{ counter: 'key|monthly|k:key_1', period_start: MONTH }]))
  t.same(readOnly, { duplicate: false, counters: [{ counter: 'key|monthly|k:key_1', period_start: MONTH, used: 50 }] }, 'a report may only read')
  t.same(await s.send(report([], [])), { duplicate: false, counters: [] }, 'or carry nothing at all')
})

t.test('a batch id is added once: a report sent again answers the totals and adds nothing', async (t) => {
  const s = await setup(t)
  const sent = report([{ counter: 'key|monthly|k:key_1', period_start: MONTH, count: 9 }])
  t.same((await s.send(sent)).counters, [{ counter: 'key|monthly|k:key_1', period_start: MONTH, used: 9 }])
  await s.send(report([{ counter: 'key|monthly|k:key_1', period_start: MONTH, count: 1 }]))
  const again = await s.send(sent)
  t.same(again, { duplicate: true, counters: [{ counter: 'key|monthly|k:key_1', period_start: MONTH, used: 10 }] },
    'a duplicate, with the totals as they are now')
  t.same(s.rows(), [['key|monthly|k:key_1', MONTH, 10]], 'counted once')
  t.same((await s.send({ ...sent, batch_id: randomBase62(24) })).counters, [{ counter: 'key|monthly|k:key_1', period_start: MONTH, used: 19 }],
    'the same uses under another batch id are other uses')
})

t.test('batch ids are forgotten after a day; counts of periods long over after 35 days, never those that do not refill', async (t) => {
  const s = await setup(t)
  await s.send(report([
    { counter: 'key|monthly|k:key_1', period_start: MONTH, count: 5 },
    { counter: 'key|total|k:key_1', period_start: 0, count: 5 }
  ]))
  t.equal(s.batches(), 1)
  s.clock.advance(DAY_MS + 1)
  await s.send(report([{ counter: 'key|daily|k:key_1', period_start: START + DAY_MS, count: 1 }]))
  t.equal(s.batches(), 1, 'the day-old id was forgotten when the next report came')
  t.equal(s.rows().length, 3, 'every count is still there')

  s.clock.advance(ENDED_PERIOD_MEMORY_MS - DAY_MS)
  await s.send(report([{ counter: 'key|daily|k:key_1', period_start: s.clock.now(), count: 1 }]))
  t.same(s.rows().map(([counter, periodStart]) => [counter, periodStart]), [
    ['key|daily|k:key_1', START + DAY_MS],
    ['key|daily|k:key_1', s.clock.now()],
    ['key|total|k:key_1', 0]
  ], 'the month\'s count, untouched for 35 days, is gone; the day\'s (34 days) and the one that never refills are kept')
})

t.test('counts stop at the largest exact JSON integer', async (t) => {
  const s = await setup(t)
  const use = { counter: 'key|total|k:key_1', period_start: 0, count: Number.MAX_SAFE_INTEGER }
  await s.send(report([use]))
  t.same((await s.send(report([use]))).counters, [{ counter: use.counter, period_start: 0, used: Number.MAX_SAFE_INTEGER }])
})

t.test('the largest report a gateway sends fits, whatever the listener\'s own body limit', async (t) => {
  const s = await setup(t, { IDENTITY_BODY_LIMIT_BYTES: '1024' })
  const counter = (i: number): string => `${String(i).padStart(4, '0')}|${'c'.repeat(2_595)}`
  const uses = Array.from({ length: QUOTA_USAGE_MAX_ENTRIES }, (_, i) => ({ counter: counter(i), period_start: Number.MAX_SAFE_INTEGER, count: Number.MAX_SAFE_INTEGER }))
  const read = Array.from({ length: QUOTA_USAGE_MAX_ENTRIES }, (_, i) => ({ counter: counter(i + QUOTA_USAGE_MAX_ENTRIES), period_start: Number.MAX_SAFE_INTEGER }))
  const largest = report(uses, read, randomBase62(64))
  const bytes = Buffer.byteLength(JSON.stringify(largest))
  t.ok(bytes > 2_500_000 && bytes <= QUOTA_USAGE_BODY_LIMIT_BYTES, `${bytes} bytes: within the route's limit (${QUOTA_USAGE_BODY_LIMIT_BYTES})`)
  const answer = await s.send(largest)
  t.equal(answer.counters.length, 2 * QUOTA_USAGE_MAX_ENTRIES, 'every counter answered')
  t.match(answer.counters[0], { used: Number.MAX_SAFE_INTEGER })
  t.match(answer.counters.at(-1), { used: 0 })
  const padded = `${JSON.stringify(largest).slice(0, -1)}${' '.repeat(QUOTA_USAGE_BODY_LIMIT_BYTES)}}`
  assertProblem(t, await s.post(padded), 413, 'body_too_large', 'over the route\'s body limit')
})

t.test('error: a report that breaks the contract anywhere is refused whole, and nothing is written', async (t) => {
  const s = await setup(t)
  const good = report([{ counter: 'key|monthly|k:key_1', period_start: MONTH, count: 5 }], [{ counter: 'key|monthly|k:key_2', period_start: MONTH }])
  const goodUse = good.uses[0] as Use
  const withUse = (use: Record<string, unknown>): unknown => ({ ...good, uses: [goodUse, { ...goodUse, ...use }] })
  const withRead = (read: Record<string, unknown>): unknown => ({ ...good, read: [{ ...good.read[0], ...read }] })
  const cases: Array<[string, unknown]> = [
    ['no batch_id', { uses: good.uses, read: good.read }],
    ['a batch_id too short', { ...good, batch_id: 'abc' }],
    ['no uses', { batch_id: good.batch_id, read: good.read }],
    ['no read', { batch_id: good.batch_id, uses: good.uses }],
    [`${QUOTA_USAGE_MAX_ENTRIES + 1} uses`, { ...good, uses: Array(QUOTA_USAGE_MAX_ENTRIES + 1).fill(goodUse) }],
    [`${QUOTA_USAGE_MAX_ENTRIES + 1} reads`, { ...good, read: Array(QUOTA_USAGE_MAX_ENTRIES + 1).fill(good.read[0]) }],
    ['an unknown member', { ...good, gateway: 'g1' }],
    ['an unknown member in a use', withUse({ limit: 5 })],
    ['count 0', withUse({ count: 0 })],
    ['count 1.5', withUse({ count: 1.5 })],
    ['count as a string', withUse({ count: '3' })],
    ['a negative period_start', withUse({ period_start: -1 })],
    ['a counter with a space', withUse({ counter: 'key|monthly|k:key 1' })],
    ['a counter with a quote', withUse({ counter: 'key|monthly|"x"' })],
    ['a counter with a backslash', withUse({ counter: 'key|monthly|\\x' })],
    ['an empty counter', withUse({ counter: '' })],
    ['a counter over 2600 characters', withUse({ counter: 'c'.repeat(2_601) })],
    ['a read with a count', withRead({ count: 1 })],
    ['a read without period_start', withRead({ period_start: undefined })]
  ]
  for (const [label, body] of cases) assertProblem(t, await s.post(body), 400, 'validation_failed', label)
  assertProblem(t, await http(`${s.adminUrl}${QUOTA_USAGE_PATH}`, { bearer: s.serviceToken, body: JSON.stringify(good), headers: { 'content-type': 'text/plain' } }),
    415, 'unsupported_media_type')
  t.same(s.rows(), [], 'nothing counted')
  t.equal(s.batches(), 0, 'no batch id remembered')
  t.same((await s.send(good)).counters.map((c: { used: number }) => c.used), [5, 0], 'control: the good report is taken')
})

t.test('error: only the service credential reports quota uses', async (t) => {
  const s = await setup(t)
  const body = report([{ counter: 'key|monthly|k:key_1', period_start: MONTH, count: 5 }])
  assertProblem(t, await http(`${s.adminUrl}${QUOTA_USAGE_PATH}`, { body }), 401, 'service_unauthorized', 'no credential')
  assertProblem(t, await http(`${s.adminUrl}${QUOTA_USAGE_PATH}`, { bearer: s.adminToken, body }), 401, 'service_unauthorized', 'the admin token')
  assertProblem(t, await http(`${s.adminUrl}${QUOTA_USAGE_PATH}`, { bearer: `${s.serviceToken}x`, body }), 401, 'service_unauthorized', 'a wrong token')
  assertProblem(t, await http(`${s.publicUrl}${QUOTA_USAGE_PATH}`, { bearer: s.serviceToken, body }), 404, 'not_found', 'on the public listener')
  t.same(s.rows(), [], 'nothing counted')
  t.equal(s.batches(), 0)
})
