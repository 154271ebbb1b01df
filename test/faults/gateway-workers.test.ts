import t from 'tap'
import type { Test } from 'tap'
import { createServer } from 'node:net'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { pollUntil } from '../helpers/gateway-auth.js'
import { rawRequest } from '../helpers/http.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { exitWithin, startProcess, type ServiceProcess } from '../helpers/process.js'
import { startProcessStack } from '../helpers/process-stack.js'
import { freePort } from '../helpers/redis.js'
import { tempDir } from '../helpers/temp.js'
import { writeMockUpstreamsFile } from '../helpers/upstreams-file.js'

/**
 * The standalone gateway with GATEWAY_WORKERS > 1: a primary and its node:cluster
 * workers, as real processes on one port, in front of identity, Redis and the mock.
 * Each worker has its own L1 caches, so the cases send requests on fresh connections
 * until both workers have answered (the request log lines say which pid did). Then the
 * primary's other duties: the metrics sum, SIGHUP and SIGTERM to every worker, a killed
 * worker replaced with a backoff, and starts that must fail once rather than loop.
 */

const leaks = watchForLeaks()

/** The cluster's primary shares the socket with the workers round-robin: this many fresh connections reach both. */
const SPREAD = 16
/** Log lines reach stdout in batches, at most 250 ms late; a loaded machine adds to it. */
const LOG_WAIT_MS = 3_000
/** A worker's start: loading the gateway app on a 2-core machine shared with other suites. */
const START_MS = 30_000
const GRACE_SECONDS = 4

/** The live (not zombie) processes whose parent is `pid`, from /proc. */
function childrenOf (pid: number): number[] {
  const children: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let stat: string
    try { stat = readFileSync(`/proc/${entry}/stat`, 'utf8') } catch { continue }
    // The command name is in parentheses and may hold spaces: the fields after it are state, ppid, …
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    if (Number(ppid) === pid && state !== 'Z') children.push(Number(entry))
  }
  return children.sort((a, b) => a - b)
}

function running (pid: number): boolean {
  if (!existsSync(`/proc/${pid}/stat`)) return false
  try { return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') !== true } catch { return false }
}

type LogLine = Record<string, unknown> & { pid: number, name?: string, msg?: string }

/** Every JSON log line of `output` (a line cut by another process's write is skipped). */
function logLines (output: string): LogLine[] {
  const lines: LogLine[] = []
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue
    try { lines.push(JSON.parse(line) as LogLine) } catch {}
  }
  return lines
}

const primaryLines = (output: string, msg: string): LogLine[] => logLines(output).filter((l) => l.name === 'gateway-primary' && l.msg === msg)
const workerRequests = (output: string, url: string): LogLine[] => logLines(output).filter((l) => l.name === 'gateway' && l.msg === 'request' && l.url === url)

/** A counter or gauge summed over the series whose labels include `labels`, from Prometheus text. */
function metric (text: string, name: string, labels: Record<string, string> = {}): number {
  return text.split('\n')
    .filter((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0)
}

/** What a primary started outside the stack needs: no identity, Redis or mock behind it (workers still start and listen). */
async function loneEnv (t: Test, extra: Record<string, string> = {}): Promise<Record<string, string>> {
  const nowhere = `http://127.0.0.1:${await freePort()}`
  return {
    GATEWAY_HOST: '127.0.0.1',
    GATEWAY_PORT: String(await freePort()),
    GATEWAY_METRICS_PORT: '0',
    GATEWAY_UPSTREAMS_FILE: writeMockUpstreamsFile(tempDir(t, 'portier-workers-'), nowhere),
    GATEWAY_WATCH_UPSTREAMS: 'false',
    IDENTITY_SERVICE_TOKEN: 'w'.repeat(40),
    IDENTITY_PUBLIC_URL: nowhere,
    IDENTITY_INTERNAL_URL: nowhere,
    LOG_LEVEL: 'info',
    ...extra
  }
}

const EVERY_WORKER_LISTENING = /"msg":"every worker is listening"/

function startGateway (t: Test, env: Record<string, string>): ServiceProcess {
  return startProcess(t, 'dist/gateway/server.js', env, EVERY_WORKER_LISTENING)
}

t.test('GATEWAY_WORKERS=2 behind one port, on a real stack', async (t) => {
  const s = await startProcessStack(t, {
    leaks,
    gatewayEnv: {
      GATEWAY_WORKERS: '2',
      GATEWAY_SHUTDOWN_GRACE_SECONDS: String(GRACE_SECONDS),
      // An hour: only identity's event, reaching every worker, can explain a refusal.
      GATEWAY_KEY_CACHE_L1_TTL_SECONDS: '3600'
    }
  })
  const gateway = s.gateway
  const primary = gateway.child().pid as number
  // The helper waits for the first worker to be ready; the second starts after it.
  t.not(await pollUntil(async () => EVERY_WORKER_LISTENING.test(gateway.output()), { timeoutMs: START_MS, intervalMs: 50 }), null,
    'both workers listen', { output: gateway.output().slice(-2_000) })
  const key = await s.createKey(['users:list', 'debug:read'])
  const headers = { 'x-api-key': key.key }

  /** `n` requests, each on a new connection; the statuses, and the pids of the workers that answered (from their log lines). */
  async function fresh (path: string, n: number, requestHeaders: Record<string, string> = headers): Promise<{ statuses: Array<number | string>, pids: number[] }> {
    const url = path.split('?')[0] as string
    const before = workerRequests(gateway.output(), url).length
    const statuses: Array<number | string> = []
    for (let i = 0; i < n; i++) {
      // A failure is recorded (ECONNRESET…), not thrown: the assertion on the statuses reports it.
      statuses.push(await rawRequest(gateway.url, path, { headers: requestHeaders }).then((answer) => answer.status, (err: NodeJS.ErrnoException) => err.code ?? err.message))
    }
    let lines: LogLine[] = []
    await pollUntil(async () => { lines = workerRequests(gateway.output(), url).slice(before); return lines.length >= n }, { timeoutMs: LOG_WAIT_MS, intervalMs: 50 })
    return { statuses, pids: [...new Set(lines.map((l) => l.pid))].sort((a, b) => a - b) }
  }
  const scrape = async (): Promise<string> => await (await fetch(`${gateway.metricsUrl}/metrics`)).text()
  let workers = childrenOf(primary)

  await t.test('the process tree: a primary and two workers, the pids the primary reports', async (t) => {
    t.equal(workers.length, 2, `the primary (${primary}) has two child processes: ${workers.join(', ')}`)
    const reported = primaryLines(gateway.output(), 'every worker is listening')[0]?.workers as number[] | undefined
    t.same([...(reported ?? [])].sort((a, b) => a - b), workers, 'they are the workers the primary started')
    t.ok(workers.every((pid) => /dist\/gateway\/server\.js/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'))), 'each runs the gateway server')
  })

  await t.test('requests on one port are answered by both workers, and /metrics on the primary sums them', async (t) => {
    const before = await scrape()
    const { statuses, pids } = await fresh('/users?per_page=1', SPREAD)
    const after = await scrape()
    t.same(statuses, Array(SPREAD).fill(200), `${SPREAD} requests on fresh connections: all 200`)
    t.same(pids, workers, 'both workers answered some of them')
    const answered = (text: string): number => metric(text, 'portier_gateway_requests_total', { route: '/users', status: '200' })
    t.equal(answered(after) - answered(before), SPREAD, `portier_gateway_requests_total grew by exactly the ${SPREAD} requests sent: the sum of both workers`)
    t.equal(metric(after, 'portier_gateway_workers'), 2, 'portier_gateway_workers says 2')
    t.equal(metric(after, 'portier_gateway_worker_restarts_total'), 0, 'no worker was replaced')
    t.equal((after.match(/^# TYPE portier_gateway_requests_total /gm) ?? []).length, 1, 'each series is declared once, not once per worker')
    t.notMatch(after, /^process_start_time_seconds/m, 'the workers\' start times are left out, not summed')
    t.equal(metric(after, 'portier_build_info', { service: 'gateway' }), 1, 'the build info is one worker\'s, not counted once per worker')
  })

  await t.test('a key revoked through the admin API is refused by every worker', async (t) => {
    const victim = await s.createKey(['users:list'])
    const warm = await fresh('/users?per_page=1', SPREAD, { 'x-api-key': victim.key })
    t.same(warm.statuses, Array(SPREAD).fill(200), 'accepted on fresh connections')
    t.same(warm.pids, workers, 'by both workers: each holds it in its own L1')
    const revoked = await s.identity.admin('POST', `/admin/keys/${victim.id}/revoke`)
    t.equal(revoked.status, 200, 'revoked')
    // The event reaches each worker on its own Redis subscription; a worker it missed would accept the key for the hour its L1 holds it.
    const refusedRound = async (): Promise<boolean> => {
      for (let i = 0; i < 4; i++) if ((await rawRequest(gateway.url, '/users?per_page=1', { headers: { 'x-api-key': victim.key } })).status !== 401) return false
      return true
    }
    t.not(await pollUntil(refusedRound, { timeoutMs: 3_000 }), null, 'four fresh connections in a row refused within 3 s')
    const after = await fresh('/users?per_page=1', SPREAD, { 'x-api-key': victim.key })
    t.same(after.statuses, Array(SPREAD).fill(401), `then refused on all ${SPREAD} fresh connections`)
    t.same(after.pids, workers, 'by both workers')
  })

  await t.test('SIGHUP to the primary reloads the upstreams file in every worker', async (t) => {
    const file = s.env.gateway.GATEWAY_UPSTREAMS_FILE as string
    const before = await fresh('/reloaded-users', 4)
    t.same(before.statuses, Array(4).fill(404), 'the new path is not routed yet')
    writeFileSync(file, readFileSync(file, 'utf8').replace('/utilisateurs: /users', '/utilisateurs: /users\n      /reloaded-users: /users'))
    const reloadsBefore = logLines(gateway.output()).filter((l) => l.msg === 'upstreams reloaded').length
    process.kill(primary, 'SIGHUP')
    let reloads: LogLine[] = []
    await pollUntil(async () => { reloads = logLines(gateway.output()).filter((l) => l.msg === 'upstreams reloaded').slice(reloadsBefore); return reloads.length >= 2 }, { timeoutMs: 5_000, intervalMs: 50 })
    t.same(reloads.map((l) => l.pid).sort((a, b) => a - b), workers, 'each worker logs the reload')
    const after = await fresh('/reloaded-users?per_page=1', SPREAD)
    t.same(after.statuses, Array(SPREAD).fill(200), `the new path answers 200 on all ${SPREAD} fresh connections`)
    t.same(after.pids, workers, 'from both workers')
    t.equal(childrenOf(primary).length, 2, 'SIGHUP stopped nothing')
  })

  await t.test('a worker killed with SIGKILL is replaced, with a backoff, and traffic keeps being answered', async (t) => {
    const [victim, survivor] = workers as [number, number]
    const deathLogged = async (pid: number): Promise<boolean> =>
      primaryLines(gateway.output(), 'worker exited unexpectedly: replacing it').some((l) => l.pid === pid)
    process.kill(victim, 'SIGKILL')
    // Logged once the primary has handled the exit: from then on it hands no connection to the dead worker.
    t.not(await pollUntil(async () => await deathLogged(victim), { timeoutMs: 5_000, intervalMs: 20 }), null, 'the primary saw the worker die')
    t.notOk(childrenOf(primary).includes(victim), 'the killed worker is gone')
    const meanwhile = await fresh('/users?per_page=1', 6)
    t.same(meanwhile.statuses, Array(6).fill(200), 'requests meanwhile are answered 200')
    t.same(meanwhile.pids, [survivor], 'by the surviving worker')

    const replaced = async (count: number): Promise<number | null> => {
      let pid: number | null = null
      await pollUntil(async () => {
        const lines = primaryLines(gateway.output(), 'replacement worker listening')
        pid = lines.length >= count ? lines[count - 1]?.pid as number : null
        return pid !== null
      }, { timeoutMs: START_MS, intervalMs: 50 })
      return pid
    }
    const first = await replaced(1)
    t.not(first, null, 'a replacement listens')
    workers = childrenOf(primary)
    t.equal(workers.length, 2, `two workers again: ${workers.join(', ')}`)
    t.ok(workers.includes(survivor) && !workers.includes(victim), 'the survivor and a new one')
    const spread = await fresh('/users?per_page=1', SPREAD)
    t.same(spread.statuses, Array(SPREAD).fill(200), 'all answered 200')
    t.same(spread.pids, workers, 'by both, the replacement included')

    // The replacement dies young: the next one waits longer.
    const young = workers.find((pid) => pid !== survivor) as number
    process.kill(young, 'SIGKILL')
    t.not(await replaced(2), null, 'it is replaced too')
    const deaths = primaryLines(gateway.output(), 'worker exited unexpectedly: replacing it')
    t.equal(deaths.length, 2, 'each death is logged')
    const [firstDelay, secondDelay] = deaths.map((l) => l.restartInMs as number) as [number, number]
    t.ok(firstDelay >= 250 && secondDelay === firstDelay * 2, `the second replacement waited twice as long: ${firstDelay} ms, then ${secondDelay} ms`)
    t.match(deaths[0], { pid: victim, signal: 'SIGKILL', worker: 1 }, 'the log line names the worker, its pid and the signal')
    workers = childrenOf(primary)
    const text = await scrape()
    t.equal(metric(text, 'portier_gateway_worker_restarts_total'), 2, 'portier_gateway_worker_restarts_total counts both')
    t.equal(metric(text, 'portier_gateway_workers'), 2, 'two listening')
  })

  await t.test('SIGTERM to the primary drains every worker: an in-flight request completes, then exit 0 and no worker left', async (t) => {
    t.equal(workers.length, 2, 'two workers before')
    const slow = rawRequest(gateway.url, '/slow?delay_ms=1500', { headers })
    // Loopback, a loaded machine: the request is in a worker by then.
    await new Promise((resolve) => setTimeout(resolve, 400))
    const signalledAt = performance.now()
    const code = await gateway.kill('SIGTERM')
    const exitMs = Math.round(performance.now() - signalledAt)
    t.equal((await slow).status, 200, 'the slow request in flight completed with 200')
    t.equal(code, 0, `the primary exited 0, ${exitMs} ms after SIGTERM`, { output: gateway.output().slice(-2_000) })
    t.ok(exitMs <= GRACE_SECONDS * 1000 + 5_000, `within the grace (${GRACE_SECONDS} s) and the primary's margin`)
    t.same(workers.filter(running), [], 'no worker is left running')
    t.equal(primaryLines(gateway.output(), 'worker exited').filter((l) => l.code === 0).length, 2, 'both exited 0')
    await t.rejects(rawRequest(gateway.url, '/healthz'), { code: 'ECONNREFUSED' }, 'the port is closed')
  })
})

t.test('GATEWAY_WORKERS is validated before anything is forked: exit 78 naming it and the value', async (t) => {
  for (const value of ['0', '-1', 'two', '1.5']) {
    const child = startGateway(t, await loneEnv(t, { GATEWAY_WORKERS: value }))
    const exit = await exitWithin(child, 15_000)
    t.equal(exit.code, 78, `${value}: exit 78`)
    t.match(child.stderr(), `GATEWAY_WORKERS: must be a positive integer or auto, not "${value}"`, `${value}: the message names the variable and the value`)
    t.notMatch(child.stdout(), /gateway-primary|Server listening/, `${value}: no worker was started`)
  }
  const child = startGateway(t, await loneEnv(t, { GATEWAY_WORKERS: '2', GATEWAY_METRICS_ON_MAIN_LISTENER: 'true', GATEWAY_METRICS_TOKEN: 'm'.repeat(32) }))
  t.equal((await exitWithin(child, 15_000)).code, 78, 'metrics on the main listener with two workers: exit 78')
  t.match(child.stderr(), /GATEWAY_METRICS_ON_MAIN_LISTENER: must be false with more than one worker/, 'the message says why')
})

t.test('GATEWAY_WORKERS=auto starts one worker per core (os.availableParallelism)', async (t) => {
  const child = startGateway(t, await loneEnv(t, { GATEWAY_WORKERS: 'auto' }))
  t.ok(await child.ready, 'every worker listens', { output: child.stdout().slice(-2_000) + child.stderr().slice(-2_000) })
  const cores = availableParallelism()
  t.equal((primaryLines(child.stdout(), 'every worker is listening')[0]?.workers as number[] | undefined)?.length, cores, `${cores} workers`)
  t.equal(childrenOf(child.child.pid as number).length, cores, `${cores} child processes`)
  child.child.kill('SIGTERM')
  t.equal((await exitWithin(child, 15_000)).code, 0, 'SIGTERM: exit 0')
})

t.test('a start that fails stops once, before the other workers are forked, instead of looping', async (t) => {
  await t.test('the port is taken: exit 1', async (t) => {
    const squatter = createServer()
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve))
    t.teardown(() => squatter.close())
    const port = (squatter.address() as { port: number }).port
    const child = startGateway(t, await loneEnv(t, { GATEWAY_WORKERS: '2', GATEWAY_PORT: String(port) }))
    const exit = await exitWithin(child, START_MS)
    t.equal(exit.code, 1, 'the primary exits 1')
    t.match(child.stdout() + child.stderr(), /EADDRINUSE/, 'the worker says why')
    t.same(primaryLines(child.stdout(), 'a worker failed to start: stopping').map((l) => l.worker), [1], 'the first worker failed, and only it ran')
  })

  await t.test('the upstreams file is refused: exit 78, the problems said once', async (t) => {
    const env = await loneEnv(t, { GATEWAY_WORKERS: '2' })
    writeFileSync(env.GATEWAY_UPSTREAMS_FILE as string, 'upstreams: 42\n')
    const child = startGateway(t, env)
    const exit = await exitWithin(child, START_MS)
    t.equal(exit.code, 78, 'the primary exits 78, as the one process would')
    t.equal((child.stderr().match(/Invalid configuration/g) ?? []).length, 1, 'one worker tried and said why', { stderr: child.stderr() })
  })

  await t.test('every worker dies and none can start again: the primary gives up after a few tries, exit 1', async (t) => {
    const env = await loneEnv(t, { GATEWAY_WORKERS: '2' })
    const child = startGateway(t, env)
    t.ok(await child.ready, 'both workers listen')
    const pids = childrenOf(child.child.pid as number)
    writeFileSync(env.GATEWAY_UPSTREAMS_FILE as string, 'upstreams: 42\n')
    for (const pid of pids) process.kill(pid, 'SIGKILL')
    const exit = await exitWithin(child, 60_000)
    t.equal(exit.code, 1, 'the primary exits 1', { output: child.stdout().slice(-3_000) })
    t.equal(primaryLines(child.stdout(), 'no worker can be started: giving up').length, 1, 'it says so')
    const delays = primaryLines(child.stdout(), 'worker exited unexpectedly: replacing it').filter((l) => l.worker === 1).map((l) => l.restartInMs as number)
    t.ok(delays.length >= 2 && delays.every((ms, i) => i === 0 || ms > (delays[i - 1] as number)), `worker 1's restarts waited longer each time: ${delays.join(', ')} ms`)
    t.same(pids.filter(running), [], 'no worker is left')
  })
})

await leaks.assertNoLeaks(t)
