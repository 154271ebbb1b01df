import t from 'tap'
import { connect } from 'node:net'
import { networkInterfaces } from 'node:os'
import { randomBytes } from 'node:crypto'
import { assertProblem } from '../helpers/assert.js'
import { http } from '../helpers/http.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { exitBeforeListening, LISTENING, startProcess } from '../helpers/process.js'
import { startProcessStack } from '../helpers/process-stack.js'
import { freePort } from '../helpers/redis.js'

/**
 * /metrics shows auth outcomes, cache tiers and process internals: it is not served on
 * the listener that carries traffic, in any spelling, but on a private listener of its
 * own, bound to loopback unless told otherwise. On the main listener it takes an
 * explicit option and a token, checked on every scrape; the option without a token
 * (or a token without the option) stops the start. Real gateway processes from dist/.
 */

/** What Prometheus sends. */
const PROMETHEUS_ACCEPT = 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1'
/** Printed by every scrape, traffic or not. */
const SERIES = /^# TYPE portier_gateway_requests_total counter$/m

const leaks = watchForLeaks()

/** True when a TCP connection to host:port is accepted. */
async function accepts (host: string, port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const socket = connect({ host, port })
    const done = (ok: boolean): void => { socket.destroy(); resolve(ok) }
    socket.once('connect', () => { done(true) })
    socket.once('error', () => { done(false) })
    setTimeout(() => { done(false) }, 2_000).unref()
  })
}

t.test('metrics exposure', async (t) => {
  const s = await startProcessStack(t, { leaks, gatewayEnv: { GATEWAY_HOST: '0.0.0.0' } })
  const gateway = s.gateway
  const key = await s.createKey(['users:list'])
  t.equal((await s.call('/users?per_page=1', { headers: { 'x-api-key': key.key } })).status, 200, 'some traffic to count')

  await t.test('by default the main listener does not serve /metrics, however it is asked for', async (t) => {
    for (const path of ['/metrics', '/metrics/', '/Metrics', '/METRICS', '/metrics?format=prometheus', '/%6detrics']) {
      const variants: Array<Record<string, string>> = [{}, { accept: PROMETHEUS_ACCEPT }, { 'x-api-key': key.key }]
      for (const headers of variants) {
        const answer = await http(`${gateway.url}${path}`, { headers })
        assertProblem(t, answer, 404, 'not_found', `GET ${path} ${JSON.stringify(Object.keys(headers))}`)
        t.notMatch(answer.text, SERIES, `GET ${path}: no series in the answer`)
      }
    }
    const openapi = await http(`${gateway.url}/openapi.json`)
    t.equal(openapi.body.paths['/metrics'], undefined, 'the OpenAPI document does not list it')
  })

  await t.test('the private listener serves it, on loopback only by default', async (t) => {
    const metrics = await http(`${gateway.metricsUrl}/metrics`, { headers: { accept: PROMETHEUS_ACCEPT } })
    t.equal(metrics.status, 200, 'GET /metrics on the metrics listener: 200')
    t.match(metrics.headers['content-type'], /^text\/plain; version=0\.0\.4/, 'Prometheus text')
    t.match(metrics.text, SERIES, 'with the gateway\'s series')
    t.notOk(metrics.text.includes(key.key), 'no key material')
    const port = Number(new URL(gateway.metricsUrl).port)
    t.match(gateway.output(), `"name":"gateway-metrics","msg":"Server listening at http://127.0.0.1:${port}"`, 'it listens on 127.0.0.1 (GATEWAY_METRICS_HOST unset)')
    const external = Object.values(networkInterfaces()).flat().find((a) => a?.family === 'IPv4' && !a.internal)?.address
    if (external === undefined) {
      t.comment('no non-loopback IPv4 interface on this machine: the reachability check is skipped')
    } else {
      t.equal(await accepts(external, Number(new URL(gateway.url).port)), true, `the main listener (GATEWAY_HOST 0.0.0.0) answers on ${external}`)
      t.equal(await accepts(external, port), false, `the metrics listener does not, on ${external}`)
    }
  })

  await t.test('the metrics listener serves nothing else, and answers like every Portier listener', async (t) => {
    for (const path of ['/healthz', '/readyz', '/users', '/openapi.json', '/docs', '/metricsx']) {
      assertProblem(t, await http(`${gateway.metricsUrl}${path}`), 404, 'not_found', `GET ${path} on the metrics listener`)
    }
    const posted = await http(`${gateway.metricsUrl}/metrics`, { method: 'POST', body: {} })
    t.equal(posted.headers['content-type'], 'application/problem+json; charset=utf-8', `POST /metrics: a problem (${posted.status})`)
    t.ok(posted.status >= 400 && posted.status < 500, 'a client error')
    assertProblem(t, await http(`${gateway.metricsUrl}/metrics%zz`), 400, 'malformed_url', 'a malformed URL')
  })

  const token = randomBytes(24).toString('hex')
  leaks.secret(token)

  await t.test('the main-listener option takes a token, checked on every request', async (t) => {
    const exposed = await s.addGateway({ GATEWAY_METRICS_ON_MAIN_LISTENER: 'true', GATEWAY_METRICS_TOKEN: token })
    const attempts: Array<[string, Record<string, string>]> = [
      ['no credential', {}],
      ['a wrong token', { authorization: `Bearer ${randomBytes(24).toString('hex')}` }],
      ['the token minus its last character', { authorization: `Bearer ${token.slice(0, -1)}` }],
      ['the token plus a character', { authorization: `Bearer ${token}0` }],
      ['the token under another scheme', { authorization: `Basic ${token}` }],
      ['the token as an API key', { 'x-api-key': token }],
      ['an API key that may list users', { 'x-api-key': key.key }],
      ['two Bearer tokens', { authorization: `Bearer ${token}, Bearer ${token}` }]
    ]
    for (const [label, headers] of attempts) {
      const answer = await http(`${exposed.url}/metrics`, { headers })
      assertProblem(t, answer, 401, 'metrics_unauthorized', label)
      t.match(answer.headers['www-authenticate'], /^Bearer realm="portier"/, `${label}: WWW-Authenticate names Bearer`)
      t.notMatch(answer.text, SERIES, `${label}: no series`)
    }
    const scraped = await http(`${exposed.url}/metrics`, { headers: { authorization: `Bearer ${token}`, accept: PROMETHEUS_ACCEPT } })
    t.equal(scraped.status, 200, 'the token: 200')
    t.match(scraped.text, SERIES, 'the series')
    t.equal((await http(`${exposed.url}/metrics`, { headers: { authorization: `bearer ${token}` } })).status, 200, 'the scheme in any letter case (RFC 9110 §11.1)')
    t.equal((await http(`${exposed.metricsUrl}/metrics`)).status, 200, 'the private listener still serves it without one')
    const openapi = await http(`${exposed.url}/openapi.json`)
    t.same(openapi.body.paths['/metrics']?.get?.security, [{ metricsToken: [] }], 'the OpenAPI document lists it, with the metrics token')
    t.match(openapi.body.components.securitySchemes.metricsToken, { type: 'http', scheme: 'bearer' }, 'as a Bearer scheme')
  })

  await t.test('the option without a token, a short token, or a token without the option stop the start', async (t) => {
    const cases: Array<[string, Record<string, string>, RegExp]> = [
      ['the option without a token', { GATEWAY_METRICS_ON_MAIN_LISTENER: 'true' }, /GATEWAY_METRICS_ON_MAIN_LISTENER: needs GATEWAY_METRICS_TOKEN/],
      ['a token of 31 characters', { GATEWAY_METRICS_ON_MAIN_LISTENER: 'true', GATEWAY_METRICS_TOKEN: 'x'.repeat(31) }, /GATEWAY_METRICS_TOKEN: .*32/],
      ['a token without the option', { GATEWAY_METRICS_TOKEN: token }, /GATEWAY_METRICS_TOKEN: is set but GATEWAY_METRICS_ON_MAIN_LISTENER is off/]
    ]
    const runs = await Promise.all(cases.map(async ([label, env, expected]) => {
      const child = startProcess(t, 'dist/gateway/server.js', {
        ...s.env.gateway, GATEWAY_PORT: String(await freePort()), GATEWAY_METRICS_PORT: String(await freePort()), ...env
      }, LISTENING)
      const exit = await exitBeforeListening(child, 60_000)
      return { label, expected, child, exit }
    }))
    for (const { label, expected, child, exit } of runs) {
      t.equal(exit.code, 78, `${label}: exit 78 (EX_CONFIG)`)
      t.match(child.stderr(), expected, `${label}: says why`)
    }
  })

  await leaks.assertNoLeaks(t)
})
