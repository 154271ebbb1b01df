import t from 'tap'
import type { Test } from 'tap'
import { assertJson } from '../helpers/assert.js'
import { INVALID_TOKEN_CHALLENGE, sleep } from '../helpers/gateway-auth.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { startProcessStack, type GatewayProcess, type ProcessStack, type ServerProcess } from '../helpers/process-stack.js'

/**
 * Scale-out: two gateway processes on one Redis. A revoked API key or
 * session is refused by both within 1 s, measured over 20 trials
 * each. Every trial warms a fresh credential on both gateways first, so both hold it
 * in memory; cache TTLs and the revocation re-sync are an hour, so only identity's
 * event (Redis pub/sub) can make a gateway refuse it in time.
 *
 * Timing is conservative: from the instant before the revoke request is sent (so
 * identity's own work and its answer count against the bound) to the arrival of the
 * first 401 from each gateway. Both gateways are polled every POLL_INTERVAL_MS from
 * that same instant, each poll with its own deadline so that a stalled one cannot
 * hide a refusal for long.
 */

const TRIALS = 20
const BOUND_MS = 1_000
const POLL_INTERVAL_MS = 10
const POLL_DEADLINE_MS = 250
/** The final check that revoked credentials stay refused is about answers, not time. */
const CHECK_DEADLINE_MS = 5_000
/** A gateway that never refuses is reported, not waited for forever. */
const GIVE_UP_MS = 5_000

const leaks = watchForLeaks()

interface Poll { status: number | null, code: string | null, challenge: string | null }

/** One GET /users?per_page=1 with its own deadline; a timed-out or failed poll has status null. */
async function poll (gateway: ServerProcess, headers: Record<string, string>, deadlineMs = POLL_DEADLINE_MS): Promise<Poll> {
  try {
    const response = await fetch(`${gateway.url}/users?per_page=1`, { headers: { accept: 'application/json', ...headers }, signal: AbortSignal.timeout(deadlineMs) })
    const text = await response.text()
    let code: string | null = null
    if (response.status !== 200) try { code = (JSON.parse(text) as { code?: string }).code ?? null } catch {}
    return { status: response.status, code, challenge: response.headers.get('www-authenticate') }
  } catch {
    return { status: null, code: null, challenge: null }
  }
}

interface Trial {
  /** Per gateway: ms from just before the revoke was sent to its first 401 (null: none within GIVE_UP_MS). */
  fromSend: Array<number | null>
  /** Per gateway: the same, from identity's answer to the revoke (negative: refused before the answer arrived). */
  fromAnswer: Array<number | null>
  /** Per gateway: the refusing poll. */
  refusals: Array<Poll | null>
  revokeStatus: number
}

/** Sends `revoke` and, from the same instant, polls every gateway until each answers 401. */
async function measure (gateways: ServerProcess[], headers: Record<string, string>, revoke: () => Promise<{ status: number }>): Promise<Trial> {
  const sentAt = performance.now()
  const revoked = revoke().then((answer) => ({ answer, at: performance.now() }))
  const firstRefusals = await Promise.all(gateways.map(async (g) => {
    for (;;) {
      const answer = await poll(g, headers)
      const at = performance.now()
      if (answer.status === 401) return { at, answer }
      if (at - sentAt > GIVE_UP_MS) return null
      await sleep(POLL_INTERVAL_MS)
    }
  }))
  const { answer, at: answeredAt } = await revoked
  return {
    fromSend: firstRefusals.map((r) => r === null ? null : Math.round(r.at - sentAt)),
    fromAnswer: firstRefusals.map((r) => r === null ? null : Math.round(r.at - answeredAt)),
    refusals: firstRefusals.map((r) => r?.answer ?? null),
    revokeStatus: answer.status
  }
}

function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] as number : Math.round(((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2)
}

/**
 * Runs the trials of one kind of credential, asserts each, and the bound on the
 * worst case over all trials and both gateways; reports worst and median.
 */
async function runTrials (t: Test, s: ProcessStack, what: string, expectedCode: string,
  prepare: (trial: number) => Promise<{ headers: Record<string, string>, revoke: () => Promise<{ status: number }> }>): Promise<void> {
  const trials: Trial[] = []
  const revokedHeaders: Array<Record<string, string>> = []
  for (let i = 0; i < TRIALS; i++) {
    const { headers, revoke } = await prepare(i)
    revokedHeaders.push(headers)
    for (const g of s.gateways) t.equal((await poll(g, headers)).status, 200, `${what} ${i + 1}: ${g.name} accepts it before the revoke`)
    const trial = await measure(s.gateways, headers, revoke)
    t.equal(trial.revokeStatus, 200, `${what} ${i + 1}: revoked through the admin API`)
    trial.refusals.forEach((refusal, n) => {
      t.ok(refusal !== null && refusal.code === expectedCode && refusal.challenge === INVALID_TOKEN_CHALLENGE,
        `${what} ${i + 1}: ${s.gateways[n]?.name ?? ''} refuses it (401 ${expectedCode}) after ${String(trial.fromSend[n])} ms`, { refusal })
    })
    trials.push(trial)
  }
  const fromSend = trials.flatMap((x) => x.fromSend)
  const fromAnswer = trials.flatMap((x) => x.fromAnswer)
  const measured = fromSend.filter((ms): ms is number => ms !== null)
  const worst = measured.length === fromSend.length ? Math.max(...measured) : null
  const perGateway = s.gateways.map((g, n) => {
    const mine = trials.map((x) => x.fromSend[n]).filter((ms): ms is number => ms !== null)
    return `${g.name} worst ${Math.max(...mine)} ms, median ${median(mine)} ms`
  }).join('; ')
  const answered = fromAnswer.filter((ms): ms is number => ms !== null)
  t.comment(`${what}: ${TRIALS} trials × ${s.gateways.length} gateways, from just before the revoke was sent to the first 401: ` +
    `worst ${String(worst ?? `none within ${GIVE_UP_MS}`)} ms, median ${median(measured)} ms (${perGateway}); ` +
    `from identity's answer: worst ${Math.max(...answered)} ms, median ${median(answered)} ms`)
  t.ok(worst !== null && worst <= BOUND_MS, `${what}: the worst case over ${TRIALS} trials on both gateways is within ${BOUND_MS} ms (${String(worst)} ms)`)
  // A verification in flight during the eviction must not have written a stale entry back. Not timed: each
  // request gets a deadline long enough that a busy machine cannot turn an answer into a missing one.
  const later = await Promise.all(s.gateways.flatMap((g) => revokedHeaders.map(async (h) => (await poll(g, h, CHECK_DEADLINE_MS)).status)))
  t.same(later.filter((status) => status !== 401), [], `${what}: every revoked credential is still refused by both gateways afterwards`)
}

/** The invalidation events a gateway heard, by type. */
async function eventsHeard (g: GatewayProcess, type: string): Promise<number> {
  const text = await (await fetch(`${g.metricsUrl}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith('portier_gateway_invalidation_events_total{') && l.includes(`type="${type}"`))
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1))
}

t.test(`two gateway processes on one Redis: revocations reach both within ${BOUND_MS} ms`, async (t) => {
  const s = await startProcessStack(t, {
    leaks,
    gateways: 2,
    gatewayEnv: {
      GATEWAY_KEY_CACHE_L1_TTL_SECONDS: '3600',
      GATEWAY_KEY_CACHE_L2_TTL_SECONDS: '3600',
      GATEWAY_REVOCATION_SYNC_SECONDS: '3600'
    }
  })
  t.equal(s.gateways.length, 2, 'two gateway processes')
  t.not(s.gateways[0]?.child().pid, s.gateways[1]?.child().pid, 'in two processes')
  const control = { key: await s.createKey(['users:list']), session: await s.login() }
  for (const g of s.gateways) {
    assertJson(t, await s.call('/users?per_page=1', { headers: { 'x-api-key': control.key.key } }, g), 200, `${g.name}: the control key before`)
    assertJson(t, await s.call('/users?per_page=1', { bearer: control.session.access_token }, g), 200, `${g.name}: the control session before`)
  }

  await t.test(`API keys: ${TRIALS} trials`, async (t) => {
    await runTrials(t, s, 'key', 'invalid_api_key', async () => {
      const key = await s.createKey(['users:list'])
      return { headers: { 'x-api-key': key.key }, revoke: async () => await s.identity.admin('POST', `/admin/keys/${key.id}/revoke`) }
    })
    for (const g of s.gateways) t.equal(await eventsHeard(g, 'key.revoked'), TRIALS, `${g.name} heard every key.revoked event`)
  })

  await t.test(`sessions: ${TRIALS} trials`, async (t) => {
    await runTrials(t, s, 'session', 'invalid_token', async () => {
      const tokens = await s.login()
      return { headers: { authorization: `Bearer ${tokens.access_token}` }, revoke: async () => await s.identity.admin('DELETE', `/admin/sessions/${tokens.sid}`) }
    })
    for (const g of s.gateways) t.equal(await eventsHeard(g, 'session.revoked'), TRIALS, `${g.name} heard every session.revoked event`)
  })

  await t.test('revocation is precise: credentials nobody revoked kept working throughout', async (t) => {
    for (const g of s.gateways) {
      assertJson(t, await s.call('/users?per_page=1', { headers: { 'x-api-key': control.key.key } }, g), 200, `${g.name}: the control key`)
      assertJson(t, await s.call('/users?per_page=1', { bearer: control.session.access_token }, g), 200, `${g.name}: the control session`)
    }
    const keys = (await s.identity.admin('GET', '/admin/keys')).body.api_keys as Array<{ id: string, status: string }>
    t.same(keys.filter((k) => k.status === 'active').map((k) => k.id), [control.key.id], 'identity: only the control key is still active')
  })
})

await leaks.assertNoLeaks(t)
