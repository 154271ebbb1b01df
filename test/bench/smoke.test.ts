import t from 'tap'
import { spawn } from 'node:child_process'
import { readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { tempDir } from '../helpers/temp.js'
import { builtEntry, REPO_ROOT } from '../helpers/process.js'
import type { BenchResult } from '../../bench/report/types.js'
import { nodeCommand } from '../helpers/node-command.js'

/**
 * The harness works end to end: `npm run bench -- --quick` with tiny durations starts
 * every process, runs every scenario and writes the reports. Nothing here judges a
 * number: timings belong to the benchmark, not to tests on a shared machine. It runs
 * the bench from dist/, which `npm test` compiles whole before any suite, rather than
 * compiling the same sources a second time (`npm run bench` = that compile + this run).
 */
// The run starts some twenty processes and takes 70 s alone, twice that beside two other
// suites on 2 cores: tap's 180 s per file is a hang guard this file needs wider, not a target.
t.setTimeout(360_000)

t.test('npm run bench -- --quick runs every scenario and writes the reports', async (t) => {
  const out = tempDir(t)
  const readmeBefore = await readFile(join(REPO_ROOT, 'README.md'), 'utf8')
  // A few hundred requests per run and a short micro-benchmark: this checks the harness, not the numbers.
  const args = [builtEntry('dist/bench/run.js'), '--quick', '--requests', '50', '--rounds', '1', '--keys', '300', '--traffic-keys', '200',
    '--micro-budget', '500', '--no-nginx-install', '--out', out]
  const child = spawn(...nodeCommand(args), { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  t.equal(code, 0, `bench exits 0\n${output.slice(-3000)}`)

  for (const step of ['[1/14] gateways warm-up', '[2/14] many routes', '[3/14] gateway workers', '[4/14] proxy overhead, 7 KB', '[5/14] tracing, 7 KB',
    '[6/14] body sizes, 1 KB and 30 KB', '[7/14] many keys', '[8/14] per-key rate limit, Redis', '[9/14] per-key rate limit, in process',
    '[10/14] many keys, each with its own rate limit', '[11/14] WebSocket echo', '[12/14] realistic upstream', '[13/14] invalid-key flood', '[14/14] logins and refreshes',
    'inflection micro-benchmark']) {
    t.match(output, step, `progress names "${step}"`)
  }

  const files = await readdir(out)
  const json = files.find((f) => /^\d{4}-\d{2}-\d{2}.*\.json$/.test(f))
  t.ok(json, `a dated JSON result is written (${files.join(', ')})`)
  t.ok(files.some((f) => f.endsWith('.md')), 'a Markdown report is written')
  t.ok(files.some((f) => f.endsWith('.svg')), 'an SVG chart is written')
  const result = JSON.parse(await readFile(join(out, json as string), 'utf8')) as BenchResult

  const judged = ['api-key', 'bearer', 'camel', 'tracing-10', 'tracing-100', 'tracing-black-hole', 'api-key-1k', 'api-key-30k', 'camel-30k', 'many-keys', 'many-routes', 'rate-limit-redis', 'rate-limit-local', 'rate-limit-many-keys',
    'websocket-echo']
  const reported = ['api-key', 'bearer', 'camel', 'tracing-10', 'tracing-100', 'tracing-black-hole', 'api-key-1k', 'api-key-30k', 'camel-30k', 'many-keys', 'many-routes', 'workers',
    'rate-limit-redis', 'rate-limit-local', 'rate-limit-many-keys', 'websocket-echo']
  // WebSocket messages against the upstream's echo directly: no HTTP headroom pair, its baseline is direct itself.
  const withoutHeadroom = new Set(['websocket-echo'])
  t.same(result.scenarios.map((s) => s.id), reported, 'every throughput scenario against the static upstream is reported')
  t.same(result.realistic.map((s) => s.id), ['realistic-api-key'], 'the realistic-upstream scenario is reported apart')
  t.match(result.settings.loadGenerator, /^autocannon/, 'the report names the load generator (autocannon: --requests counts requests)')
  for (const scenario of [...result.scenarios, ...result.realistic]) {
    for (const variant of scenario.variants) {
      t.equal(variant.rounds.length, 1, `${scenario.id}/${variant.id}: one recorded run per round`)
      t.ok(variant.median.requestsPerSecond > 0, `${scenario.id}/${variant.id}: requests were answered`)
      t.equal(variant.median.non2xx, 0, `${scenario.id}/${variant.id}: every answer was 2xx`)
      if (variant.id !== 'direct' && variant.id !== 'websocket-direct') {
        t.ok((variant.median.proxyCpuMicrosPerRequest ?? -1) >= 0, `${scenario.id}/${variant.id}: the proxy's CPU per request is measured`)
      }
    }
    t.ok(Number.isFinite(scenario.throughputRatio), `${scenario.id}: a ratio is computed`)
    if (withoutHeadroom.has(scenario.id)) {
      t.same([scenario.headroom, scenario.valid], [null, true], `${scenario.id}: no headroom pair, always judged`)
      continue
    }
    t.ok(scenario.headroom !== null && Number.isFinite(scenario.headroom), `${scenario.id}: direct ÷ bare is measured in its own rounds`)
    t.equal(scenario.valid, (scenario.headroom ?? 0) >= 3, `${scenario.id}: valid exactly when the headroom is at least 3`)
  }
  for (const id of judged) {
    const scenario = result.scenarios.find((s) => s.id === id)
    t.equal(scenario?.met === null, scenario?.valid === false, `${id}: judged against its target unless invalid`)
  }
  t.equal(result.scenarios.find((s) => s.id === 'workers')?.met, null, 'the workers scenario has no target')
  const rateLimits = {
    'rate-limit-redis': ['key-no-limit', 'key-limit-redis', 0.9],
    'rate-limit-local': ['key-no-limit', 'key-limit-local', 0.97],
    'rate-limit-many-keys': ['one-limited-key', 'many-limited-keys', 0.9]
  } as const
  for (const [id, [baseline, candidate, ratio]] of Object.entries(rateLimits)) {
    const scenario = result.scenarios.find((s) => s.id === id)
    t.same(scenario?.variants.map((v) => v.id), ['direct', 'bare', baseline, candidate], `${id}: the headroom pair, then the run without the limit's count and the run with it, in one rotation`)
    t.equal(scenario?.candidate, candidate, `${id}: the limited run is judged`)
    t.same([scenario?.target.against, scenario?.target.minThroughputRatio], [baseline, ratio], `${id}: against ${baseline}, at least ${ratio} ×`)
  }
  t.match(result.scenarios.find((s) => s.id === 'rate-limit-many-keys')?.title, /^200 keys, each with its own rate limit/, 'as many keys with a limit as --traffic-keys')
  t.equal(result.realistic[0]?.met, null, 'the realistic upstream is not judged')
  const api = result.scenarios.find((s) => s.id === 'api-key')
  for (const id of ['direct', 'floor', 'bare', 'gateway-key']) t.ok(api?.variants.some((v) => v.id === id), `the 7 KB rotation ran ${id}`)
  t.equal(result.settings.connections, 50, '50 concurrent connections by default')
  t.ok(Number.isFinite(api?.variants.find((v) => v.id === 'gateway-key')?.floorRatio), 'the gateway\'s ratio to the node floor is computed')
  t.ok(Number.isFinite(api?.cpuRatio), 'the gateway\'s CPU per request is compared with the bare proxy\'s')
  t.match(api?.notes.join('\n'), /Moonshot, not a target: ≥ 0\.75 × the node floor/, 'the moonshot is a note, not a target')
  const nginxRan = api?.variants.some((v) => v.id === 'nginx') ?? false
  t.equal(nginxRan, result.skipped.every((line) => !line.startsWith('nginx')), 'nginx either ran or its absence is stated')

  t.equal(result.flood?.non401, 0, 'every flood answer is 401')
  t.ok((result.flood?.identityVerificationsPerSecond ?? -1) >= 0 && (result.flood?.argon2VerificationsPerSecond ?? -1) >= 0, 'identity verifications and argon2 runs are counted')
  t.ok((result.identity?.loginsPerSecond ?? 0) > 0 && (result.identity?.refreshesPerSecond ?? 0) > 0, 'logins and refreshes were answered')
  t.ok((result.memory?.warmupRssMiB ?? 0) > 0 && (result.memory?.peakRssMiB ?? 0) >= (result.memory?.finalRssMiB ?? Infinity), 'gateway memory is read')
  t.same([...new Set(result.micro.map((m) => m.size))], ['1 KB', '100 KB', '10 MB'], 'the micro-benchmark covers the three sizes')
  t.same([...new Set(result.micro.map((m) => m.shape))], ['narrow', '40-key records'], 'and the two shapes')
  t.ok(result.inflectionStream !== null, 'the event-loop and memory rows of the rewriter are reported')

  t.equal(await readFile(join(REPO_ROOT, 'README.md'), 'utf8'), readmeBefore, 'the README is left alone without --readme')
})
