import t from 'tap'
import { randomLookupId } from '../../../common/api-key-format.js'
import { KEY_USAGE_MAX_ENTRIES, type KeyUsageReceipt, type KeyUsageReport } from '../../../common/internal-api.js'
import { IdentityUnreachableError } from '../../../gateway/auth/identity-client.js'
import { createGatewayMetrics, type GatewayMetrics } from '../../../gateway/observability/metrics.js'
import { createUsageCounter, type UsageCounter } from '../../../gateway/usage/usage-counter.js'
import { createUsageReporter } from '../../../gateway/usage/usage-reporter.js'
import { fakeClock, silentLog, START } from '../../helpers/auth-caches.js'
import { pollUntil } from '../../helpers/gateway-auth.js'

/**
 * The gateway's key usage counter and reporter, on their own: what a request adds,
 * the bound on lookup ids, reports cut at KEY_USAGE_MAX_ENTRIES, a report identity did
 * not take kept and sent again as it was (same batch id, never merged with later uses,
 * so identity can tell a repeat), a report identity refused dropped without holding
 * back the others, and what close() sends. Identity is a fake here; the suites of
 * test/gateway/key-usage and test/faults/key-usage run the real one.
 */

type Outcome = 'ok' | Error

interface FakeIdentity {
  reportKeyUsage: (report: KeyUsageReport) => Promise<KeyUsageReceipt>
  /** Every report sent, in order, the failed ones included. */
  sent: KeyUsageReport[]
  /** What the next calls answer, in order; 'ok' once the list is empty. */
  outcomes: Outcome[]
}

function fakeIdentity (): FakeIdentity {
  const identity: FakeIdentity = {
    sent: [],
    outcomes: [],
    async reportKeyUsage (report) {
      identity.sent.push(structuredClone(report))
      const outcome = identity.outcomes.shift() ?? 'ok'
      if (outcome !== 'ok') throw outcome
      return { applied: report.uses.length, unknown: 0, duplicate: false }
    }
  }
  return identity
}

const down = (): Error => new IdentityUnreachableError('identity /internal/keys/usage: connect ECONNREFUSED')
const refused = (): Error => new IdentityUnreachableError('identity /internal/keys/usage answered 400', { status: 400 })

/** Uses per lookup id over every report sent, once per batch id: as identity counts them. */
function taken (identity: FakeIdentity): Map<string, number> {
  const totals = new Map<string, number>()
  const seen = new Set<string>()
  for (const report of identity.sent) {
    if (seen.has(report.batch_id)) continue
    seen.add(report.batch_id)
    for (const use of report.uses) totals.set(use.lookup_id, (totals.get(use.lookup_id) ?? 0) + use.count)
  }
  return totals
}

async function metricValue (metrics: GatewayMetrics, name: 'keyUsageFlushes' | 'keyUsageDropped', label: string): Promise<number> {
  const { values } = await metrics[name].get()
  return values.filter((v) => Object.values(v.labels).includes(label)).reduce((sum, v) => sum + v.value, 0)
}

function setup (options: { maxKeys?: number, intervalMs?: number } = {}): {
  counter: UsageCounter, identity: FakeIdentity, metrics: GatewayMetrics, clock: ReturnType<typeof fakeClock>, reporter: ReturnType<typeof createUsageReporter>
} {
  const clock = fakeClock()
  const counter = createUsageCounter({ maxKeys: options.maxKeys ?? 100_000, now: clock.now })
  const identity = fakeIdentity()
  const metrics = createGatewayMetrics()
  const reporter = createUsageReporter({ counter, identity, intervalMs: options.intervalMs ?? 3_600_000, maxKeys: options.maxKeys ?? 100_000, metrics, log: silentLog })
  return { counter, identity, metrics, clock, reporter }
}

t.test('the counter: uses per lookup id, and the last one\'s time, route and address', async (t) => {
  const { counter, clock } = setup()
  counter.record('aaaaaaaaaaaa', '/users', '10.0.0.1')
  clock.advance(1_000)
  counter.record('aaaaaaaaaaaa', '/users/:id', '10.0.0.2')
  counter.record('bbbbbbbbbbbb', '/tasks', '10.0.0.3')
  t.equal(counter.size, 2)
  const first = counter.take()
  const hour = (allowed: number) => ({ start: START, allowed, forbidden: 0, rate_limited: 0, quota_exhausted: 0, upstream_error: 0 })
  t.same([...first], [
    ['aaaaaaaaaaaa', { count: 2, lastUsedAt: START + 1_000, route: '/users/:id', ip: '10.0.0.2', hour: hour(2), earlier: null }],
    ['bbbbbbbbbbbb', { count: 1, lastUsedAt: START + 1_000, route: '/tasks', ip: '10.0.0.3', hour: hour(1), earlier: null }]
  ])
  t.equal(counter.size, 0, 'taking empties it')
  counter.record('aaaaaaaaaaaa', '/users', '10.0.0.1')
  t.same(counter.take().get('aaaaaaaaaaaa'), { count: 1, lastUsedAt: START + 1_000, route: '/users', ip: '10.0.0.1', hour: hour(1), earlier: null }, 'counted afresh after a take')
  t.same([...first.values()].map((u) => u.count), [2, 1], 'what was taken before is not touched by later uses')
})

t.test('the counter\'s bound: new lookup ids beyond it are not counted, and taken ones hold their place until released', async (t) => {
  const { counter } = setup({ maxKeys: 2 })
  counter.record('aaaaaaaaaaaa', '/users', '10.0.0.1')
  counter.record('bbbbbbbbbbbb', '/users', '10.0.0.1')
  counter.record('cccccccccccc', '/users', '10.0.0.1')
  counter.record('cccccccccccc', '/users', '10.0.0.1')
  counter.record('aaaaaaaaaaaa', '/users', '10.0.0.1')
  t.equal(counter.size, 2, 'a third lookup id is not held')
  t.equal(counter.takeOverflow(), 2, 'its two uses are counted as overflow')
  t.equal(counter.takeOverflow(), 0, 'once')
  const held = counter.take()
  t.equal(held.get('aaaaaaaaaaaa')?.count, 2, 'known lookup ids still count beyond the bound')
  counter.record('cccccccccccc', '/users', '10.0.0.1')
  t.equal(counter.size, 0, 'while the taken two are not released, there is still no room')
  t.equal(counter.takeOverflow(), 1)
  counter.release(1)
  counter.record('cccccccccccc', '/users', '10.0.0.1')
  counter.record('dddddddddddd', '/users', '10.0.0.1')
  t.equal(counter.size, 1, 'one released place: one new lookup id')
  t.equal(counter.takeOverflow(), 1)
})

t.test('reports carry at most KEY_USAGE_MAX_ENTRIES lookup ids, each under a batch id of its own', async (t) => {
  const { counter, identity, reporter } = setup()
  const ids = Array.from({ length: 2 * KEY_USAGE_MAX_ENTRIES + 7 }, () => randomLookupId())
  for (const id of ids) counter.record(id, '/users', '10.0.0.1')
  counter.record(ids[0] as string, '/users/:id', '2001:db8::1')
  await reporter.close()
  t.same(identity.sent.map((r) => r.uses.length), [KEY_USAGE_MAX_ENTRIES, KEY_USAGE_MAX_ENTRIES, 7])
  t.equal(new Set(identity.sent.map((r) => r.batch_id)).size, 3, 'three batch ids')
  t.same(identity.sent[0]?.uses[0], { lookup_id: ids[0], count: 2, last_used_at: new Date(START).toISOString(), last_route: '/users/:id', last_ip: '2001:db8::1' })
  t.same([...taken(identity).values()].reduce((a, b) => a + b, 0), ids.length + 1, 'every use reported once')
})

t.test('what identity would refuse in a route or an address is sent as null, not the whole report refused', async (t) => {
  const { counter, identity, reporter } = setup()
  counter.record('aaaaaaaaaaaa', '/users/"x"', 'not an address')
  counter.record('bbbbbbbbbbbb', `/${'a'.repeat(3_000)}`, `${'1'.repeat(70)}`)
  counter.record('cccccccccccc', '/reports/*', '::ffff:127.0.0.1')
  counter.record('dddddddddddd', '/users', undefined) // the client's socket already gone
  await reporter.close()
  t.same(identity.sent[0]?.uses.map((u) => [u.last_route, u.last_ip]), [[null, null], [null, null], ['/reports/*', '::ffff:127.0.0.1'], ['/users', null]])
})

t.test('a failed report is kept and sent again as it was, first; later uses wait and are not merged into it', async (t) => {
  const { counter, identity, metrics, reporter } = setup({ intervalMs: 20 })
  identity.outcomes.push(down(), down())
  reporter.start()
  counter.record('aaaaaaaaaaaa', '/users', '10.0.0.1')
  counter.record('aaaaaaaaaaaa', '/users', '10.0.0.1')
  t.ok(await pollUntil(async () => identity.sent.length >= 1, { timeoutMs: 5_000 }) !== null, 'sent once, and failed')
  for (let i = 0; i < 5; i++) counter.record('aaaaaaaaaaaa', '/tasks', '10.0.0.2')
  t.ok(await pollUntil(async () => identity.sent.length >= 4, { timeoutMs: 10_000 }) !== null, 'sent again until taken, then the later uses')
  await reporter.close()
  const [first, second, third, fourth] = identity.sent
  t.equal(second?.batch_id, first?.batch_id, 'the retry keeps the batch id')
  t.equal(third?.batch_id, first?.batch_id, 'and again')
  t.same(third, first, 'the retried report is the same report: the uses counted meanwhile are not in it')
  t.same(first?.uses.map((u) => u.count), [2])
  t.not(fourth?.batch_id, first?.batch_id, 'the later uses go in a report of their own')
  t.same(fourth?.uses.map((u) => [u.count, u.last_route]), [[5, '/tasks']])
  t.same(taken(identity), new Map([['aaaaaaaaaaaa', 7]]), 'identity, applying each batch id once, counts 7: none lost, none twice')
  t.equal(await metricValue(metrics, 'keyUsageFlushes', 'failed'), 2, 'two failed flushes counted')
  t.equal(await metricValue(metrics, 'keyUsageFlushes', 'ok'), 2, 'two good ones')
})

t.test('backoff: the wait after failures doubles', async (t) => {
  const { counter, identity, reporter } = setup({ intervalMs: 50 })
  identity.outcomes.push(down(), down(), down(), down())
  const times: number[] = []
  const send = identity.reportKeyUsage
  identity.reportKeyUsage = async (report) => { times.push(performance.now()); return await send(report) }
  counter.record('aaaaaaaaaaaa', '/users', '10.0.0.1')
  reporter.start()
  t.ok(await pollUntil(async () => times.length >= 5, { timeoutMs: 10_000 }) !== null, 'four failures, then taken')
  await reporter.close()
  const gaps = times.slice(1).map((time, i) => time - (times[i] as number))
  // 100, 200, 400, 800 ms planned: each wait at least its plan (timers never fire early), and longer than the one before.
  for (const [i, gap] of gaps.entries()) t.ok(gap >= 50 * 2 ** (i + 1) - 5, `wait ${i + 1}: ${Math.round(gap)} ms, planned ${50 * 2 ** (i + 1)}`)
})

t.test('a report identity refuses (400) is dropped and counted, and does not hold back the next ones', async (t) => {
  const { counter, identity, metrics, reporter } = setup()
  for (let i = 0; i < KEY_USAGE_MAX_ENTRIES + 3; i++) counter.record(randomLookupId(), '/users', '10.0.0.1')
  // Refused with its hourly outcomes, then without them (as an older identity would be asked: test/gateway/usage-over-time-counter).
  identity.outcomes.push(refused(), refused())
  await reporter.close()
  t.same(identity.sent.map((r) => r.uses.length), [KEY_USAGE_MAX_ENTRIES, KEY_USAGE_MAX_ENTRIES, 3], 'the refused report was sent once in each form, then the next')
  t.equal(await metricValue(metrics, 'keyUsageFlushes', 'refused'), 1)
  t.equal(await metricValue(metrics, 'keyUsageDropped', 'refused'), KEY_USAGE_MAX_ENTRIES, 'its uses counted as dropped')
  t.equal(await metricValue(metrics, 'keyUsageDropped', 'shutdown'), 0, 'nothing else lost')
})

t.test('close sends what is left once; when identity does not take it, the uses are counted as lost', async (t) => {
  const { counter, identity, metrics, reporter } = setup()
  counter.record('aaaaaaaaaaaa', '/users', '10.0.0.1')
  counter.record('aaaaaaaaaaaa', '/users', '10.0.0.1')
  counter.record('bbbbbbbbbbbb', '/users', '10.0.0.1')
  identity.outcomes.push(down())
  await reporter.close()
  t.equal(identity.sent.length, 1, 'one try, no backoff at shutdown')
  t.equal(await metricValue(metrics, 'keyUsageDropped', 'shutdown'), 3, 'three uses lost, counted')
  await reporter.close()
  t.equal(identity.sent.length, 1, 'a second close does nothing')
})

t.test('close after a failure sends the kept report, then what was counted since', async (t) => {
  const { counter, identity, reporter } = setup({ intervalMs: 20 })
  identity.outcomes.push(down())
  counter.record('aaaaaaaaaaaa', '/users', '10.0.0.1')
  reporter.start()
  t.ok(await pollUntil(async () => identity.sent.length >= 1, { timeoutMs: 5_000 }) !== null)
  counter.record('bbbbbbbbbbbb', '/users', '10.0.0.1')
  await reporter.close()
  t.same(identity.sent.slice(1).map((r) => r.uses.map((u) => u.lookup_id)), [['aaaaaaaaaaaa'], ['bbbbbbbbbbbb']],
    'the kept report first (a retry may have sent it already), then the later uses in a report of their own')
  t.equal(identity.sent[1]?.batch_id, identity.sent[0]?.batch_id, 'the kept report under its batch id')
})

t.test('overflow is logged and counted when the reporter next runs', async (t) => {
  const { counter, metrics, reporter } = setup({ maxKeys: 1 })
  counter.record('aaaaaaaaaaaa', '/users', '10.0.0.1')
  for (let i = 0; i < 4; i++) counter.record('bbbbbbbbbbbb', '/users', '10.0.0.1')
  await reporter.close()
  t.equal(await metricValue(metrics, 'keyUsageDropped', 'overflow'), 4)
})
