import t from 'tap'
import { startStack, type TestGateway } from '../helpers/gateway.js'
import { pollUntil } from '../helpers/gateway-auth.js'

/**
 * Usage over time, end to end: requests with keys through two gateways, counted there
 * by outcome and hour, reported to identity with the use counts, and shown by
 * GET /admin/keys/{id}/usage. What identity shows is exactly what the clients were
 * answered: every request once, under its outcome, in its hour.
 */

const FAST = { keyUsageFlushSeconds: 0.2 }
const HOUR_MS = 3_600_000

type Outcome = 'allowed' | 'forbidden' | 'rate_limited' | 'quota_exhausted' | 'upstream_error'
type Tally = Record<Outcome | 'total', number>

const emptyTally = (): Tally => ({ allowed: 0, forbidden: 0, rate_limited: 0, quota_exhausted: 0, upstream_error: 0, total: 0 })

/** What the client was answered, as identity should count it. */
function tallyAnswer (tally: Tally, status: number, code: unknown): void {
  tally.total++
  if (status === 403) tally.forbidden++
  else if (status === 429 && code === 'rate_limited') tally.rate_limited++
  else if (status === 429 && code === 'quota_exhausted') tally.quota_exhausted++
  else if (status === 200 || status >= 500) {
    tally.allowed++
    if (status >= 500) tally.upstream_error++
  } else throw new Error(`unexpected answer ${status} ${String(code)}`)
}

interface Planned { key: string, path: string, gateway: TestGateway, tally: Tally }

/** Sends every planned request, eight at a time, and tallies each answer under its key. */
async function send (planned: Planned[]): Promise<void> {
  let next = 0
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < planned.length) {
      const request = planned[next++] as Planned
      const answer = await request.gateway.call(request.path, { headers: { 'x-api-key': request.key } })
      tallyAnswer(request.tally, answer.status, answer.body?.code)
    }
  }))
}

t.test('1000 requests through two gateways: identity shows each outcome exactly, within 10 s', async (t) => {
  const s = await startStack(t, { gateway: FAST })
  const gateways = [s.gateway, await s.addGateway()]
  // The stack's clock is shared by identity and both gateways: put it mid-hour, so the requests all fall in one.
  s.clock.advance(HOUR_MS - (s.clock.now() % HOUR_MS) + 20 * 60_000)
  const limited = await s.createKey(['users:list', 'debug:read'], { policies: [{ name: 'burst', kind: 'rate', limit: 300, window_seconds: 60, partition: 'key' }] })
  const metered = await s.createKey(['users:list'], { policies: [{ name: 'lifetime', kind: 'quota', limit: 100, period: 'never', partition: 'key' }] })
  const tallies = { limited: emptyTally(), metered: emptyTally() }

  // The limited key's 600: first 50 its upstream answers 503 (within its rate limit), then 550: 100 it may not make, 450 let through up to the limit.
  const planned: Planned[] = []
  for (let i = 0; i < 600; i++) {
    const path = i < 50 ? '/status/503' : (i - 50) % 11 < 2 ? '/tasks' : '/users?per_page=1'
    planned.push({ key: limited.key, path, gateway: gateways[i % 2] as TestGateway, tally: tallies.limited })
  }
  for (let i = 0; i < 400; i++) planned.push({ key: metered.key, path: '/users?per_page=1', gateway: gateways[i % 2] as TestGateway, tally: tallies.metered })
  await send(planned)
  const sentAt = performance.now()

  t.equal(tallies.limited.total + tallies.metered.total, 1000)
  t.equal(tallies.limited.forbidden, 100, 'the key was refused 100 requests for a permission')
  t.equal(tallies.limited.upstream_error, 50, 'its upstream answered 50 with a 503')
  t.ok(tallies.limited.rate_limited > 0, `its rate limit refused some beyond 300 (${tallies.limited.rate_limited})`)
  t.ok(tallies.metered.quota_exhausted > 0, `the other key's quota refused some beyond 100 (${tallies.metered.quota_exhausted})`)

  const usageOf = async (id: string): Promise<Record<string, any>> => (await s.admin('GET', `/admin/keys/${id}/usage`)).body
  let shown = { limited: emptyTally(), metered: emptyTally() }
  const ms = await pollUntil(async () => {
    shown = { limited: (await usageOf(limited.id)).totals, metered: (await usageOf(metered.id)).totals }
    return shown.limited.total + shown.metered.total >= 1000
  }, { since: sentAt, timeoutMs: 10_000, intervalMs: 100 })
  t.ok(ms !== null, `identity shows the 1000 within 10 s (${ms ?? 'not'} ms)`)
  t.same(shown, tallies, 'exactly, per key and per outcome: nothing lost, nothing twice')

  const limitedUsage = await usageOf(limited.id)
  t.equal(limitedUsage.buckets.length, 24)
  t.same(limitedUsage.buckets.at(-1), { start: new Date(s.clock.now() - (s.clock.now() % HOUR_MS)).toISOString(), ...tallies.limited },
    'all of it in the current hour')
  const view = (await s.admin('GET', `/admin/keys/${limited.id}`)).body.api_key
  t.equal(view.secrets[0].use_count, tallies.limited.allowed, 'the use count is the allowed requests, as before')

  await t.test('the next hour: counted in a bucket of its own', async (t) => {
    s.clock.advance(HOUR_MS)
    const next = { limited: emptyTally(), metered: emptyTally() }
    await send(Array.from({ length: 20 }, (_, i) => ({ key: limited.key, path: i < 5 ? '/tasks' : '/users?per_page=1', gateway: gateways[i % 2] as TestGateway, tally: next.limited })))
    t.equal(next.limited.forbidden, 5)
    const reached = await pollUntil(async () => (await usageOf(limited.id)).totals.total >= tallies.limited.total + 20, { timeoutMs: 10_000, intervalMs: 100 })
    t.ok(reached !== null, 'reported')
    const buckets = (await usageOf(limited.id)).buckets as Array<Tally & { start: string }>
    t.same(buckets.slice(-2).map(({ start, ...counts }) => counts), [tallies.limited, next.limited], 'the hour before as it was; this hour its own')
  })
})
