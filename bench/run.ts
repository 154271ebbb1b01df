import { execFile } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Command, InvalidArgumentError, Option } from 'commander'
import { NGINX } from './baselines/nginx.js'
import { LoadDriver } from './load/driver.js'
import { WRK, wrkVersion } from './load/wrk.js'
import { describeMachine } from './machine.js'
import type { MicroOutput } from './micro/inflection.js'
import { memoryOf } from './processes/proc-stats.js'
import { formatRun } from './rounds.js'
import type { BenchResult, MemoryResult, ScenarioResult } from './report/types.js'
import { renderReadmeSummary, replaceReadmeBlock } from './report/summary.js'
import { LATEST_NAME, writeReports } from './report/write.js'
import { bodySizes } from './scenarios/body-sizes.js'
import { login, type BenchContext } from './scenarios/context.js'
import { flood } from './scenarios/flood.js'
import { identityRates } from './scenarios/identity-rates.js'
import { manyKeys } from './scenarios/many-keys.js'
import { manyRoutes } from './scenarios/many-routes.js'
import { proxyOverhead } from './scenarios/proxy-overhead.js'
import { tracingCost } from './scenarios/tracing.js'
import { rateLimitLocal } from './scenarios/rate-limit-local.js'
import { rateLimitManyKeys } from './scenarios/rate-limit-many-keys.js'
import { rateLimitRedis } from './scenarios/rate-limit-redis.js'
import { realistic } from './scenarios/realistic.js'
import { websocketEcho } from './scenarios/websocket.js'
import { workers } from './scenarios/workers.js'
import { defaultSettings, MAX_LIMITED_KEYS_IN_TRAFFIC, type RunSettings } from './settings.js'
import { startStack, type Stack } from './stack.js'
import { findOrInstallTool } from './tools.js'
import { staticUsersPath } from './upstreams.js'

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url))
/** Gateway RSS after the run may be at most this times its RSS after the warm-up. */
const MAX_RSS_GROWTH = 1.2

interface Flags {
  quick: boolean
  duration?: number
  rounds?: number
  warmup?: number
  connections?: number
  keys?: number
  trafficKeys?: number
  nginx: boolean
  nginxInstall: boolean
  loadGenerator: 'auto' | 'wrk' | 'autocannon'
  wrkInstall: boolean
  wrkThreads: number
  out: string
  readme: boolean
  cpuProf?: string
  requests?: number
  microBudget?: number
  only?: string[]
}

function positive (integer: boolean) {
  return (value: string): number => {
    const n = Number(value)
    if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) throw new InvalidArgumentError(`must be a positive ${integer ? 'integer' : 'number'}.`)
    return n
  }
}

function nonNegative (value: string): number {
  const n = Number(value)
  if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError('must be a number ≥ 0.')
  return n
}

function parseFlags (): Flags {
  return new Command('bench')
    .description('Portier benchmark: throughput, latency and memory against a bare proxy and nginx, on this machine.')
    .option('--quick', 'smoke run: 2 short rounds, fewer keys (2 to 3 minutes)', false)
    .option('--duration <seconds>', 'length of one load run', positive(false))
    .option('--rounds <n>', 'alternating rounds per scenario (figures are medians)', positive(true))
    .option('--warmup <seconds>', 'unrecorded warm-up run per variant (0: none)', nonNegative)
    .option('--connections <n>', 'concurrent connections of the load generator', positive(true))
    .option('--keys <n>', 'API keys seeded in identity for the many-keys scenario', positive(true))
    .option('--traffic-keys <n>', `distinct keys in the many-keys traffic, and in the rate-limited many-keys traffic (at most ${MAX_LIMITED_KEYS_IN_TRAFFIC.toLocaleString('en')})`, positive(true))
    .option('--no-nginx', 'leave out the nginx reference')
    .option('--no-nginx-install', 'do not install nginx with apt-get when it is absent')
    .addOption(new Option('--load-generator <name>', 'what sends the throughput scenarios\' load: wrk when found or installable, else autocannon (auto)').choices(['auto', 'wrk', 'autocannon']).default('auto'))
    .option('--no-wrk-install', 'do not install wrk with apt-get when it is absent')
    .option('--wrk-threads <n>', 'wrk threads (each takes up to a core from the processes measured)', positive(true), 1)
    .option('--out <dir>', 'where results are written', 'bench/results')
    .option('--readme', 'replace the results block of README.md with this run\'s table', false)
    .option('--requests <n>', 'send n requests per load run instead of running for --duration: a check that the harness works, not a measurement', positive(true))
    .option('--micro-budget <ms>', 'timed budget of the inflection micro-benchmark, its throughput cells (default 10000 with --quick, 60000 without)', positive(true))
    .option('--only <steps>', `run only these steps, comma-separated (${STEP_NAMES.join(', ')}); the report then holds only their rows`, steps)
    .option('--cpu-prof <dir>', 'write a CPU profile of each gateway, the bare proxies and the node floor to <dir> (summarise: node dist-bench/bench/profile-summary.js <file>)')
    .parse()
    .opts<Flags>()
}

/** The bench's steps, in the order they run: `--only` names some of them. */
const STEP_NAMES = ['routes', 'workers', 'overhead', 'tracing', 'sizes', 'many-keys', 'limit-redis', 'limit-local', 'limit-many-keys', 'websocket', 'realistic', 'flood', 'identity', 'micro'] as const
type StepName = typeof STEP_NAMES[number]

function steps (value: string): string[] {
  const names = value.split(',').map((name) => name.trim()).filter((name) => name !== '')
  const unknown = names.filter((name) => !(STEP_NAMES as readonly string[]).includes(name))
  if (names.length === 0 || unknown.length > 0) throw new InvalidArgumentError(`unknown step ${unknown.join(', ') || '(none)'}; the steps are ${STEP_NAMES.join(', ')}.`)
  return names
}

function settingsFrom (flags: Flags, loadGenerator: string): RunSettings {
  const base = defaultSettings(flags.quick)
  return {
    loadGenerator,
    ...base,
    durationSeconds: flags.duration ?? base.durationSeconds,
    rounds: flags.rounds ?? base.rounds,
    warmupSeconds: flags.warmup ?? base.warmupSeconds,
    connections: flags.connections ?? base.connections,
    keysInIdentity: flags.keys ?? base.keysInIdentity,
    distinctKeysInTraffic: Math.min(flags.trafficKeys ?? base.distinctKeysInTraffic, flags.keys ?? base.keysInIdentity),
    limitedKeysInTraffic: Math.min(flags.trafficKeys ?? base.limitedKeysInTraffic, flags.keys ?? base.keysInIdentity, MAX_LIMITED_KEYS_IN_TRAFFIC)
  }
}

const startedAt = Date.now()
function say (line: string): void {
  process.stdout.write(`[${((Date.now() - startedAt) / 1000).toFixed(0).padStart(4)} s] ${line}\n`)
}

/**
 * Every kind of gateway traffic, on every gateway alike (a gateway compared while its
 * code is still being optimised by the JIT would look slower than it is), before the
 * RSS the final one is compared with.
 */
async function warmGateways (ctx: BenchContext, seconds: number): Promise<void> {
  const { stack } = ctx
  const key = { 'x-api-key': stack.accounts.apiKey }
  const kinds: Array<Record<string, string>> = [
    key,
    { ...key, 'x-api-inflection': 'camel' },
    { authorization: `Bearer ${(await login(stack)).access_token}` },
    { 'x-api-key': stack.accounts.limitedApiKey }
  ]
  for (const gateway of [stack.gateway, stack.gatewayManyRoutes, stack.gatewayTwoWorkers, stack.gatewayWithoutRedis]) {
    for (const headers of kinds) {
      const outcome = await ctx.driver.run({ url: gateway.url + staticUsersPath(), method: 'GET', headers, connections: ctx.connections, durationSeconds: seconds })
      say(`  warm-up ${gateway.name}: ${formatRun(outcome)}`)
    }
  }
}

/**
 * The inflection micro-benchmark, in its own process (no server shares its CPU): the
 * rewriter's throughput cells, its longest event-loop block and, from a child process
 * of its own, its RSS growth over a 200 MB body.
 */
async function runMicro (quick: boolean, budgetMs: number | undefined): Promise<MicroOutput> {
  const args = ['--json', ...(quick ? ['--quick'] : []), ...(budgetMs !== undefined ? ['--budget', String(budgetMs)] : [])]
  const { stdout } = await promisify(execFile)(process.execPath, [fileURLToPath(new URL('./micro/inflection.js', import.meta.url)), ...args], { maxBuffer: 16 * 1024 * 1024 })
  return JSON.parse(stdout) as MicroOutput
}

function memoryVerdict (warmupRssMiB: number, stack: Stack): MemoryResult {
  const { rssMiB, peakRssMiB } = memoryOf(stack.gateway.pid)
  const ratio = rssMiB / warmupRssMiB
  return { warmupRssMiB, finalRssMiB: rssMiB, peakRssMiB, ratio, met: ratio <= MAX_RSS_GROWTH }
}

/**
 * wrk when it can be had (it takes a few percent of a core where autocannon takes most
 * of one, on a machine whose cores the proxies need), else autocannon; autocannon
 * always for a --requests run, which wrk cannot count.
 */
async function chooseLoadGenerator (flags: Flags, skipped: string[]): Promise<{ wrk: string | null, description: string }> {
  const autocannon = 'autocannon (one Node process)'
  if (flags.requests !== undefined) return { wrk: null, description: `${autocannon}: --requests counts requests, which wrk cannot` }
  if (flags.loadGenerator === 'autocannon') return { wrk: null, description: `${autocannon}: --load-generator autocannon` }
  const found = await findOrInstallTool(WRK, flags.wrkInstall, say)
  if ('absent' in found) {
    if (flags.loadGenerator === 'wrk') throw new Error(`--load-generator wrk: ${found.absent}`)
    skipped.push(`wrk: ${found.absent}; autocannon sent the load, and its CPU is taken from the processes measured`)
    say(`load generator: autocannon (${found.absent})`)
    return { wrk: null, description: autocannon }
  }
  const threads = `${flags.wrkThreads} ${flags.wrkThreads === 1 ? 'thread' : 'threads'}`
  return { wrk: found.binary, description: `wrk ${await wrkVersion(found.binary)}, ${threads} (autocannon for the flood, logins and refreshes)` }
}

async function main (): Promise<void> {
  const flags = parseFlags()
  const skipped: string[] = []
  const generator = await chooseLoadGenerator(flags, skipped)
  const settings = settingsFrom(flags, generator.description)
  say(`portier bench, ${settings.mode}: ${settings.rounds} rounds of ${settings.durationSeconds} s, ${settings.connections} connections; load: ${settings.loadGenerator}`)
  let nginxBinary: string | null = null
  if (!flags.nginx) skipped.push('nginx reference: left out (--no-nginx)')
  else {
    const found = await findOrInstallTool(NGINX, flags.nginxInstall, say)
    if ('binary' in found) nginxBinary = found.binary
    else {
      skipped.push(`nginx reference: ${found.absent}`)
      say(`skipping the nginx reference: ${found.absent}`)
    }
  }
  const stack = await startStack({
    manyKeys: settings.keysInIdentity,
    trafficKeys: settings.distinctKeysInTraffic,
    limitedTrafficKeys: settings.limitedKeysInTraffic,
    nginx: nginxBinary,
    mockUsers: settings.mockUsers,
    ...(flags.cpuProf !== undefined ? { cpuProfileDir: resolve(flags.cpuProf) } : {}),
    say
  })
  const driver = new LoadDriver({
    ...(flags.requests !== undefined ? { requestsPerRun: flags.requests } : {}),
    wrk: generator.wrk !== null ? { binary: generator.wrk, threads: flags.wrkThreads, scratchDir: stack.dir } : null
  })
  const result: Partial<BenchResult> = {}
  const wanted = (step: StepName): boolean => flags.only === undefined || flags.only.includes(step)
  try {
    const ctx: BenchContext = {
      stack,
      driver,
      connections: settings.connections,
      say,
      rounds: { rounds: settings.rounds, durationSeconds: settings.durationSeconds, warmupSeconds: settings.warmupSeconds, say }
    }
    // The warm-up, then each step that runs but the micro-benchmark (it runs after, in a process of its own).
    const total = 1 + STEP_NAMES.filter((name) => name !== 'micro' && wanted(name)).length
    let done = 1
    /** Runs a step when it is wanted, numbered among the steps that run. */
    const step = async <T>(name: StepName, title: string, run: () => Promise<T>): Promise<T | null> => {
      if (!wanted(name)) return null
      say(`[${++done}/${total}] ${title}`)
      return await run()
    }
    say(`[1/${total}] gateways warm-up`)
    await warmGateways(ctx, Math.max(settings.warmupSeconds, settings.durationSeconds / 2))
    const warmupRssMiB = memoryOf(stack.gateway.pid).rssMiB
    say(`  gateway RSS after warm-up: ${warmupRssMiB.toFixed(1)} MiB`)
    // Routes and workers first, while the gateways compared have served the same
    // traffic: later, the 10-route one has run every other scenario.
    const routes = await step('routes', 'many routes', async () => await manyRoutes(ctx))
    const twoWorkers = await step('workers', 'gateway workers', async () => await workers(ctx))
    const scenarios: ScenarioResult[] = []
    const add = (found: ScenarioResult | ScenarioResult[] | null): void => { if (found !== null) scenarios.push(...[found].flat()) }
    add(await step('overhead', 'proxy overhead, 7 KB', async () => await proxyOverhead(ctx)))
    add(await step('tracing', 'tracing, 7 KB', async () => await tracingCost(ctx)))
    add(await step('sizes', 'body sizes, 1 KB and 30 KB, camel inflection at 30 KB', async () => await bodySizes(ctx)))
    add(await step('many-keys', 'many keys', async () => await manyKeys(ctx, { keysInIdentity: settings.keysInIdentity })))
    add(routes)
    add(twoWorkers)
    add(await step('limit-redis', 'per-key rate limit, Redis', async () => await rateLimitRedis(ctx)))
    add(await step('limit-local', 'per-key rate limit, in process', async () => await rateLimitLocal(ctx)))
    add(await step('limit-many-keys', 'many keys, each with its own rate limit', async () => await rateLimitManyKeys(ctx)))
    add(await step('websocket', 'WebSocket echo', async () => await websocketEcho(ctx)))
    const realisticRun = await step('realistic', 'realistic upstream', async () => await realistic(ctx))
    if (realisticRun !== null) result.realistic = [realisticRun]
    result.flood = await step('flood', 'invalid-key flood', async () => await flood(ctx, settings.flood))
    result.identity = await step('identity', 'logins and refreshes', async () => await identityRates(ctx))
    result.memory = memoryVerdict(warmupRssMiB, stack)
    say(`  gateway RSS: ${result.memory.finalRssMiB.toFixed(1)} MiB after the run, peak ${result.memory.peakRssMiB.toFixed(1)} MiB`)
    result.scenarios = scenarios
    result.machine = await describeMachine(stack.nginxVersion)
  } finally {
    await driver.close()
    await stack.close()
  }
  const { micro, inflectionStream } = wanted('micro')
    ? (say('inflection micro-benchmark'), await runMicro(flags.quick, flags.microBudget))
    : { micro: [], inflectionStream: null }
  const { warmupSeconds: _w, flood: _f, mockUsers: _m, limitedKeysInTraffic: _l, ...reported } = settings
  const complete: BenchResult = {
    version: 2,
    startedAt: new Date(startedAt).toISOString(),
    finishedAt: new Date().toISOString(),
    machine: result.machine as BenchResult['machine'],
    settings: reported,
    scenarios: result.scenarios ?? [],
    realistic: result.realistic ?? [],
    micro,
    inflectionStream,
    flood: result.flood ?? null,
    identity: result.identity ?? null,
    memory: result.memory ?? null,
    skipped
  }
  const written = await writeReports(complete, flags.out)
  say(`results: ${written.json}, ${written.markdown}, ${written.svg}`)
  for (const s of complete.scenarios) {
    const verdict = !s.valid ? 'INVALID' : s.met === null ? '·' : s.met ? 'met   ' : 'MISSED'
    const headroom = s.headroom !== null ? `, headroom ${s.headroom.toFixed(1)}×` : ''
    say(`  ${verdict} ${s.title}: ${s.throughputRatio.toFixed(2)}×, ${Number.isFinite(s.cpuRatio) ? `CPU ${s.cpuRatio.toFixed(2)}× ` : ''}(${s.target.description})${headroom}`)
  }
  if (flags.readme) {
    const readmePath = `${REPO_ROOT}README.md`
    const latest = (ext: string): string => relative(REPO_ROOT, resolve(flags.out, `${LATEST_NAME}.${ext}`))
    const block = renderReadmeSummary(complete, { markdown: latest('md'), chart: latest('svg') })
    await writeFile(readmePath, replaceReadmeBlock(await readFile(readmePath, 'utf8'), block))
    say('README.md results block replaced')
  }
}

await main()
