import t from 'tap'
import { LoadDriver } from '../../bench/load/driver.js'
import type { LoadJob } from '../../bench/load/job.js'
import { RESULT_MARKER, luaString, parseWrkOutput, wrkCanRun, wrkScript } from '../../bench/load/wrk.js'

/**
 * The wrk path without wrk (it is optional, and the tests cannot count on it): which
 * jobs go to it, the Lua script a job becomes, and how wrk's printed figures become a
 * load outcome. `npm run bench` runs it for real when wrk is there.
 */

const job: LoadJob = { url: 'http://127.0.0.1:1/users?size=7k', method: 'GET', headers: { 'x-api-key': 'ptk_a"b\\c' }, connections: 50, durationSeconds: 3 }

t.test('wrk runs the timed jobs; autocannon what wrk cannot count or follow', async (t) => {
  t.ok(wrkCanRun(job), 'a timed GET')
  t.ok(wrkCanRun({ ...job, rotateHeader: { name: 'x-api-key', values: ['a', 'b'] } }), 'a header picked at random per request')
  t.notOk(wrkCanRun({ ...job, amount: 100 }), 'a count of requests')
  t.notOk(wrkCanRun({ ...job, rotateHeader: { name: 'x-api-key', values: ['a'], sequential: true } }), 'values in turn')
  t.notOk(wrkCanRun({ ...job, refreshTokens: [{ access_token: 'a', refresh_token: 'r' }] }), 'refresh chains')
  t.notOk(wrkCanRun({ ...job, autocannonOnly: true }), 'a job that reads answers by status')

  const wrk = { binary: '/nonexistent/wrk', threads: 1, scratchDir: '/tmp' }
  const withWrk = new LoadDriver({ wrk })
  const checking = new LoadDriver({ wrk, requestsPerRun: 50 })
  const without = new LoadDriver({ wrk: null })
  t.teardown(async () => { await Promise.all([withWrk.close(), checking.close(), without.close()]) })
  t.equal(withWrk.generatorFor(job), 'wrk')
  t.equal(withWrk.generatorFor({ ...job, autocannonOnly: true }), 'autocannon')
  t.equal(checking.generatorFor(job), 'autocannon', 'a --requests run counts requests: autocannon')
  t.equal(without.generatorFor(job), 'autocannon', 'no wrk: autocannon')
})

t.test('a job becomes a Lua script that sets the request and prints the figures', async (t) => {
  t.equal(luaString('a"b\\c\né'), '"a\\34b\\92c\\10\\195\\169"', 'quotes, backslashes, control and non-ASCII bytes as decimal escapes')
  const script = wrkScript({ ...job, method: 'POST', body: '{"a":1}' })
  t.match(script, 'wrk.method = "POST"')
  t.match(script, 'wrk.headers["x-api-key"] = "ptk_a\\34b\\92c"')
  t.match(script, 'wrk.body = "{\\34a\\34:1}"')
  t.notMatch(script, 'request = function', 'no per-request function without a rotated header: wrk sends a prebuilt request')
  t.match(script, `io.write(string.format("${RESULT_MARKER}`, 'the result line starts with the marker')
  t.match(script, 'latency:percentile(99)', 'p99 from wrk\'s own histogram, in µs')

  const rotating = wrkScript({ ...job, rotateHeader: { name: 'x-api-key', values: ['k1', 'k2'] } }, '/tmp/keys.values')
  t.match(rotating, 'for line in io.lines("/tmp/keys.values") do values[#values + 1] = line end', 'the values are read from their file')
  t.match(rotating, 'wrk.headers["x-api-key"] = values[math.random(#values)]', 'a value at random per request')
  t.throws(() => wrkScript({ ...job, rotateHeader: { name: 'x-api-key', values: ['k1'] } }), /values file/)
})

t.test('wrk\'s printed figures become a load outcome', async (t) => {
  const stdout = [
    'Running 3s test @ http://127.0.0.1:1/users',
    '  1 threads and 50 connections',
    `${RESULT_MARKER}{"durationMicros":3000000,"requests":15000,"status":3,"connect":0,"read":1,"write":0,"timeout":2,"p50Micros":1234,"p99Micros":5678}`,
    ''
  ].join('\n')
  t.same(parseWrkOutput(stdout), {
    requestsPerSecond: 5000,
    p50Ms: 1.234,
    p99Ms: 5.678,
    non2xx: 3,
    errors: 1,
    timeouts: 2,
    statusCounts: { '2xx': 14_997, '≥400': 3 },
    totalRequests: 15_000
  }, 'µs percentiles kept to the µs; answers of 400 or more counted apart, so a run that saw them fails its check')
  t.throws(() => parseWrkOutput('unable to connect to 127.0.0.1:1 Connection refused\n'), /wrk printed no result/)
})
