import t from 'tap'
import { metricSum, pollUntil } from '../helpers/gateway-auth.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { assertLoad, latency, runLoad, type LoadSample } from '../helpers/load-loop.js'
import { startProcessStack, type ProcessStack } from '../helpers/process-stack.js'

/**
 * Faults, key usage: gateway processes count every request let through with a key and
 * report the counts to identity every GATEWAY_KEY_USAGE_FLUSH_SECONDS. While identity
 * hangs (SIGSTOP) or is gone (SIGKILL), requests with a cached key are still answered
 * at once, since reporting is off the request path; the counts wait, are sent again
 * under the same batch ids, and arrive whole once identity is back: not one lost, not
 * one twice (a report identity reads once it resumes, after the gateway gave up on its
 * answer, is sent again and recognised by its batch id). SIGTERM reports what is
 * pending before the process exits.
 */

const FLUSH_SECONDS = 0.2
/** A report to a hung identity fails after this: a request that waited on one would take as long. */
const IDENTITY_TIMEOUT_MS = 2_000
/** A cached key never waits on identity: a request slower than this did (the loopback round trip is milliseconds). */
const AT_ONCE_MS = 1_000
const OUTAGE_MS = 3_000

const leaks = watchForLeaks()

async function keyView (s: ProcessStack, id: string): Promise<Record<string, any>> {
  return (await s.identity.admin('GET', `/admin/keys/${id}`)).body.api_key
}

const useCount = (view: Record<string, any>): number => (view.secrets as Array<{ use_count: number }>).reduce((n, s) => n + s.use_count, 0)

/** The cached key, over keep-alive loops, for `durationMs`. */
async function traffic (s: ProcessStack, key: string, durationMs: number): Promise<LoadSample[]> {
  return await runLoad({
    loops: 3,
    durationMs,
    requestTimeoutMs: 5_000,
    pauseMs: 5,
    target: () => ({ label: 'cached key', url: `${s.gateway.url}/users?per_page=1`, headers: { 'x-api-key': key } })
  })
}

t.test('key usage through identity outages and a gateway shutdown', async (t) => {
  const s = await startProcessStack(t, {
    leaks,
    gatewayEnv: { GATEWAY_KEY_USAGE_FLUSH_SECONDS: String(FLUSH_SECONDS), GATEWAY_IDENTITY_TIMEOUT_MS: String(IDENTITY_TIMEOUT_MS) }
  })

  await t.test('identity hung, then killed: requests answered at once, and every use arrives once it is back', async (t) => {
    const key = await s.createKey(['users:list'])
    const warm = await s.call('/users?per_page=1', { headers: { 'x-api-key': key.key } })
    t.equal(warm.status, 200, 'the key, now cached')
    t.ok(await pollUntil(async () => useCount(await keyView(s, key.id)) === 1, { timeoutMs: 10_000 }) !== null, 'its use reported')

    // Stopped, not ended: its sockets still accept, nothing answers (kill() would wait for an exit).
    t.ok(s.identity.child().kill('SIGSTOP'), 'identity stopped')
    const hung = await traffic(s, key.key, OUTAGE_MS)
    assertLoad(t, hung, 'identity hung', [200])
    t.ok(latency(hung).max < AT_ONCE_MS, `identity hung: every request answered at once (max ${Math.round(latency(hung).max)} ms, p50 ${Math.round(latency(hung).p50)} ms)`)
    const failedWhileHung = await metricSum(s.gateway, 'portier_gateway_key_usage_flushes_total', { outcome: 'failed' })
    t.ok(failedWhileHung >= 1, `a report timed out meanwhile (${failedWhileHung}), and was kept`)
    // Resumed, identity reads the reports the gateway gave up on and applies them; the gateway sends them again.
    s.identity.child().kill('SIGCONT')
    const afterHang = 1 + hung.length
    t.ok(await pollUntil(async () => useCount(await keyView(s, key.id)) >= afterHang, { timeoutMs: 30_000, intervalMs: 200 }) !== null, 'the uses arrived once identity resumed')
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    t.equal(useCount(await keyView(s, key.id)), afterHang, `exactly ${afterHang} uses, whether or not identity applied the report it stopped on before the gateway sent it again`)

    t.equal(await s.identity.kill('SIGKILL'), null, 'identity killed')
    const gone = await traffic(s, key.key, OUTAGE_MS)
    assertLoad(t, gone, 'identity gone', [200])
    t.ok(latency(gone).max < AT_ONCE_MS, `identity gone: every request answered at once (max ${Math.round(latency(gone).max)} ms)`)
    const failed = await metricSum(s.gateway, 'portier_gateway_key_usage_flushes_total', { outcome: 'failed' })
    t.ok(failed > failedWhileHung, `reports failed meanwhile (${failed - failedWhileHung}), and were kept`)

    await s.identity.restart()
    const expected = afterHang + gone.length
    const arrived = await pollUntil(async () => useCount(await keyView(s, key.id)) >= expected, { timeoutMs: 30_000, intervalMs: 200 })
    t.ok(arrived !== null, `the uses arrived after the restart (${arrived} ms)`)
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    t.equal(useCount(await keyView(s, key.id)), expected, `exactly ${expected} uses: none lost, none counted twice`)
  })

  await t.test('SIGTERM: a gateway reports what it counted before it exits', async (t) => {
    const g = await s.addGateway({ GATEWAY_KEY_USAGE_FLUSH_SECONDS: '300' })
    const key = await s.createKey(['users:list'])
    for (let i = 0; i < 30; i++) t.equal((await s.call('/users?per_page=1', { headers: { 'x-api-key': key.key } }, g)).status, 200, `request ${i + 1}`)
    t.equal(useCount(await keyView(s, key.id)), 0, 'nothing reported yet: the interval is 5 minutes')
    t.equal(await g.kill('SIGTERM'), 0, 'the gateway exits 0')
    t.match(await keyView(s, key.id), { last_used_route: '/users', last_used_ip: '127.0.0.1', secrets: [{ use_count: 30 }] }, 'its 30 uses were reported on the way out')
    t.notMatch(g.output(), /key uses not reported/, 'none logged as lost')
  })

  await leaks.assertNoLeaks(t)
})
