import { pino } from 'pino'
import t from 'tap'
import { randomLookupId } from '../../common/api-key-format.js'
import { KEY_USAGE_MAX_HOURS, type KeyUsageReceipt, type KeyUsageReport } from '../../common/internal-api.js'
import { IdentityUnreachableError } from '../../gateway/auth/identity-client.js'
import { GatewayProblems } from '../../gateway/errors.js'
import { createGatewayMetrics } from '../../gateway/observability/metrics.js'
import { refusalOutcome } from '../../gateway/usage/refusal-outcome.js'
import { createUsageCounter } from '../../gateway/usage/usage-counter.js'
import { createUsageReporter } from '../../gateway/usage/usage-reporter.js'
import { CommonProblems } from '../../common/problem.js'
import { fakeClock, START } from '../helpers/auth-caches.js'
import { captureLogs } from '../helpers/logs.js'

/**
 * Usage over time, at the gateway: each secret's requests counted per UTC hour and by
 * outcome where they arrive, so a report sent after an hour ended still gives each
 * hour its own; refusals counted by what refused them; and a report an identity older
 * than the hourly outcomes refuses sent again with its uses alone. Identity is a fake
 * here; test/gateway/usage-over-time runs the real one behind two gateways.
 */

const HOUR_MS = 3_600_000
const iso = (ms: number): string => new Date(ms).toISOString()
const counts = (c: Partial<Record<'allowed' | 'forbidden' | 'rate_limited' | 'quota_exhausted' | 'upstream_error', number>>) =>
  ({ allowed: 0, forbidden: 0, rate_limited: 0, quota_exhausted: 0, upstream_error: 0, ...c })

function setup (options: { maxKeys?: number, answer?: (report: KeyUsageReport) => Error | null } = {}) {
  const clock = fakeClock()
  const counter = createUsageCounter({ maxKeys: options.maxKeys ?? 100_000, now: clock.now })
  const sent: KeyUsageReport[] = []
  const identity = {
    async reportKeyUsage (report: KeyUsageReport): Promise<KeyUsageReceipt> {
      sent.push(structuredClone(report))
      const refusal = options.answer?.(report) ?? null
      if (refusal !== null) throw refusal
      return { applied: report.uses.length, unknown: 0, duplicate: false }
    }
  }
  const logs = captureLogs()
  const log = pino({ level: 'warn' }, logs.stream)
  const reporter = createUsageReporter({ counter, identity, intervalMs: 3_600_000, maxKeys: options.maxKeys ?? 100_000, metrics: createGatewayMetrics(), log })
  return { clock, counter, reporter, sent, logs: logs.lines }
}

t.test('each hour its own counts: a report sent after an hour ended attributes each request to its hour', async (t) => {
  const { clock, counter, reporter, sent } = setup()
  clock.advance(HOUR_MS - 2_000) // 00:59:58
  counter.record('aaaaaaaaaaaa', '/users', '10.0.0.1')
  counter.count('aaaaaaaaaaaa', 'forbidden')
  clock.advance(1_999) // 00:59:59.999, the last millisecond of the first hour
  counter.record('aaaaaaaaaaaa', '/users', '10.0.0.1')
  clock.advance(1) // 01:00:00, the second hour
  counter.record('aaaaaaaaaaaa', '/tasks', '10.0.0.2')
  counter.count('aaaaaaaaaaaa', 'rate_limited')
  clock.advance(2 * HOUR_MS) // 03:00:00, an hour skipped
  counter.count('aaaaaaaaaaaa', 'quota_exhausted')
  await reporter.close()
  t.equal(sent.length, 1, 'one report')
  t.same(sent[0]?.uses, [{ lookup_id: 'aaaaaaaaaaaa', count: 3, last_used_at: iso(START + HOUR_MS), last_route: '/tasks', last_ip: '10.0.0.2' }],
    'the uses as before: every request let through, and the last')
  t.same(sent[0]?.hours, [
    { lookup_id: 'aaaaaaaaaaaa', hour_start: iso(START), ...counts({ allowed: 2, forbidden: 1 }) },
    { lookup_id: 'aaaaaaaaaaaa', hour_start: iso(START + HOUR_MS), ...counts({ allowed: 1, rate_limited: 1 }) },
    { lookup_id: 'aaaaaaaaaaaa', hour_start: iso(START + 3 * HOUR_MS), ...counts({ quota_exhausted: 1 }) }
  ], 'the hours, oldest first; none for the hour without requests')
})

t.test('a key only refused since the last report has hours and no use', async (t) => {
  const { counter, reporter, sent } = setup()
  counter.count('bbbbbbbbbbbb', 'forbidden')
  counter.count('bbbbbbbbbbbb', 'forbidden')
  counter.record('cccccccccccc', '/users', '10.0.0.1')
  counter.count('cccccccccccc', 'upstream_error')
  await reporter.close()
  t.same(sent[0]?.uses.map((u) => [u.lookup_id, u.count]), [['cccccccccccc', 1]], 'no use for the refused key (identity would refuse a count of 0)')
  t.same(sent[0]?.hours?.map((h) => [h.lookup_id, h.allowed, h.forbidden, h.upstream_error]), [['bbbbbbbbbbbb', 0, 2, 0], ['cccccccccccc', 1, 0, 1]],
    'an upstream error is counted besides the allowed request it was')
})

t.test('reports carry at most KEY_USAGE_MAX_HOURS hours; each lookup id gives its place back once its last hour is sent', async (t) => {
  const { clock, counter, reporter, sent } = setup({ maxKeys: 2 })
  // Identity away for long: 300 hours of one key's refusals, then 300 of another's.
  for (const id of ['aaaaaaaaaaaa', 'bbbbbbbbbbbb']) {
    for (let h = 0; h < 300; h++) {
      counter.count(id, 'forbidden')
      clock.advance(HOUR_MS)
    }
  }
  await reporter.close()
  t.same(sent.map((r) => r.hours?.length), [KEY_USAGE_MAX_HOURS, 600 - KEY_USAGE_MAX_HOURS], 'two reports')
  t.equal(new Set(sent.map((r) => r.batch_id)).size, 2, 'each under its own batch id')
  t.equal(sent.flatMap((r) => r.hours ?? []).reduce((n, h) => n + h.forbidden, 0), 600, 'every refusal once')
  counter.record(randomLookupId(), '/users', '10.0.0.1')
  counter.record(randomLookupId(), '/users', '10.0.0.1')
  t.equal(counter.takeOverflow(), 0, 'both places given back: two new lookup ids are counted')
})

t.test('an identity older than the hourly outcomes: the same batch is sent again with its uses alone, and nothing is lost from them', async (t) => {
  const legacy = (report: KeyUsageReport): Error | null => report.hours !== undefined
    ? new IdentityUnreachableError('identity /internal/keys/usage answered 400', { status: 400 })
    : null
  const { counter, reporter, sent, logs } = setup({ answer: legacy })
  counter.record('aaaaaaaaaaaa', '/users', '10.0.0.1')
  counter.record('aaaaaaaaaaaa', '/users', '10.0.0.1')
  counter.count('bbbbbbbbbbbb', 'forbidden')
  await reporter.close()
  t.equal(sent.length, 2, 'sent twice')
  t.ok(sent[0]?.hours !== undefined && sent[1]?.hours === undefined, 'with its hours, then without')
  t.equal(sent[1]?.batch_id, sent[0]?.batch_id, 'under the same batch id (identity applied nothing the first time)')
  t.same(sent[1]?.uses, sent[0]?.uses, 'the same uses')
  t.ok(logs.some((line) => String(line.msg).includes('sent without them')), 'logged')

  const onlyRefused = setup({ answer: legacy })
  onlyRefused.counter.count('cccccccccccc', 'rate_limited')
  await onlyRefused.reporter.close()
  t.equal(onlyRefused.sent.length, 1, 'a report of refusals only is not sent again: an older identity takes no report without uses')
})

t.test('which refusals are outcomes of their own', async (t) => {
  t.equal(refusalOutcome(GatewayProblems.permissionDenied(['users:list'])), 'forbidden')
  t.equal(refusalOutcome(GatewayProblems.permissionNotDeclared(['GET', '/x'])), 'forbidden', 'a route no permission is declared for is a 403 too')
  t.equal(refusalOutcome(GatewayProblems.rateLimited(['burst', '1'])), 'rate_limited')
  t.equal(refusalOutcome(GatewayProblems.concurrencyLimited(['in-flight'])), 'rate_limited', 'a concurrency limit answers 429 like a rate limit')
  t.equal(refusalOutcome(GatewayProblems.quotaExhausted(['monthly', '60'])), 'quota_exhausted')
  t.equal(refusalOutcome(GatewayProblems.trafficControlUnavailable()), undefined, 'limits that cannot be checked are not the key\'s doing')
  t.equal(refusalOutcome(CommonProblems.bodyTooLarge([10])), undefined)
  t.equal(refusalOutcome(new Error('boom')), undefined)
})
