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

  for (const step of ['[1/6] gateways warm-up', '[2/6] many routes', '[3/6] proxy overhead', '[4/6] many keys', '[5/6] invalid-key flood', '[6/6] logins and refreshes', 'inflection micro-benchmark']) {
    t.match(output, step, `progress names "${step}"`)
  }

  const files = await readdir(out)
  const json = files.find((f) => /^\d{4}-\d{2}-\d{2}.*\.json$/.test(f))
  t.ok(json, `a dated JSON result is written (${files.join(', ')})`)
  t.ok(files.some((f) => f.endsWith('.md')), 'a Markdown report is written')
  t.ok(files.some((f) => f.endsWith('.svg')), 'an SVG chart is written')
  const result = JSON.parse(await readFile(join(out, json as string), 'utf8')) as BenchResult

  t.same(result.scenarios.map((s) => s.id), ['api-key', 'bearer', 'camel', 'many-keys', 'many-routes'], 'every throughput scenario is reported')
  for (const scenario of result.scenarios) {
    for (const variant of scenario.variants) {
      t.equal(variant.rounds.length, 1, `${scenario.id}/${variant.id}: one recorded run per round`)
      t.ok(variant.median.requestsPerSecond > 0, `${scenario.id}/${variant.id}: requests were answered`)
      t.equal(variant.median.non2xx, 0, `${scenario.id}/${variant.id}: every answer was 2xx`)
    }
    t.ok(Number.isFinite(scenario.throughputRatio), `${scenario.id}: a ratio is computed`)
    t.equal(typeof scenario.met, 'boolean', `${scenario.id}: judged against its target`)
  }
  const api = result.scenarios.find((s) => s.id === 'api-key')
  t.ok(api?.variants.some((v) => v.id === 'direct') && api.variants.some((v) => v.id === 'bare'), 'the direct and bare-proxy baselines ran')
  const nginxRan = api?.variants.some((v) => v.id === 'nginx') ?? false
  t.equal(nginxRan, result.skipped.every((line) => !line.startsWith('nginx')), 'nginx either ran or its absence is stated')

  t.equal(result.flood?.non401, 0, 'every flood answer is 401')
  t.ok((result.flood?.identityVerificationsPerSecond ?? -1) >= 0 && (result.flood?.argon2VerificationsPerSecond ?? -1) >= 0, 'identity verifications and argon2 runs are counted')
  t.ok((result.identity?.loginsPerSecond ?? 0) > 0 && (result.identity?.refreshesPerSecond ?? 0) > 0, 'logins and refreshes were answered')
  t.ok((result.memory?.warmupRssMiB ?? 0) > 0 && (result.memory?.peakRssMiB ?? 0) >= (result.memory?.finalRssMiB ?? Infinity), 'gateway memory is read')
  t.same([...new Set(result.micro.map((m) => m.size))], ['1 KB', '100 KB', '10 MB'], 'the micro-benchmark covers the three sizes')

  t.equal(await readFile(join(REPO_ROOT, 'README.md'), 'utf8'), readmeBefore, 'the README is left alone without --readme')
})
