import t from 'tap'
import { Agent, request as httpRequest } from 'node:http'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { latency, sample, type LoadSample } from '../helpers/load-loop.js'
import { startProcessStack } from '../helpers/process-stack.js'

/**
 * Inflection must not let a few bodies stall the event loop. The worst case is a body
 * of about 1 MB made only of distinct member names that every style renames, sent with
 * `x-api-inflection: camel`: each name is a conversion of its own. Eight such bodies at
 * a time, over and over, to an authenticated upstream route (POST /echo) and to
 * anonymous login (POST /sessions), while /healthz is probed: its latency must stay low.
 * (Unbounded, it went from ~20 ms to over a second.) The bodies are refused, and cheaply:
 * login's body limit is a few KiB, and a request body has at most
 * GATEWAY_MAX_INFLECTED_REQUEST_MEMBERS members, counted before it is parsed.
 */

const BODIES_AT_ONCE = 8
const ATTACK_MS = 3_000
const PROBE_PAUSE_MS = 20
const PROBE_DEADLINE_MS = 10_000
/** A generous bound: the machine is shared, and the unbounded gateway answered in ~1.2 s. */
const HEALTHZ_P99_MAX_MS = 300
const MAX_BODY_BYTES = 1_048_575

const leaks = watchForLeaks()

/** The largest object of distinct snake_case names (`a_b0`, `a_b1`, …) within `maxBytes`. */
function distinctKeysBody (maxBytes: number): { text: string, members: number } {
  const members: string[] = []
  let bytes = 2
  for (let i = 0; ; i++) {
    const member = `"a_b${i}":0`
    if (bytes + member.length + 1 > maxBytes) break
    members.push(member)
    bytes += member.length + 1
  }
  return { text: `{${members.join(',')}}`, members: members.length }
}

interface Sent { status: number | null, error: string | null, ms: number }

/** One POST over its own connection; resolves whatever happens (status null on a transport error). */
async function post (url: string, headers: Record<string, string>, body: Buffer): Promise<Sent> {
  const startedAt = performance.now()
  const { hostname, port, pathname } = new URL(url)
  return await new Promise((resolve) => {
    const req = httpRequest({
      host: hostname,
      port,
      path: pathname,
      method: 'POST',
      agent: false,
      headers: { accept: 'application/json', 'content-type': 'application/json', 'content-length': String(body.length), ...headers }
    }, (res) => {
      res.resume()
      res.on('end', () => { resolve({ status: res.statusCode ?? null, error: null, ms: performance.now() - startedAt }) })
      res.on('error', (err: NodeJS.ErrnoException) => { resolve({ status: res.statusCode ?? null, error: err.code ?? err.message, ms: performance.now() - startedAt }) })
    })
    req.on('error', (err: NodeJS.ErrnoException) => { resolve({ status: null, error: err.code ?? err.message, ms: performance.now() - startedAt }) })
    req.end(body)
  })
}

t.test('eight worst-case inflection bodies at a time do not stall /healthz', async (t) => {
  const s = await startProcessStack(t, { leaks })
  const key = await s.createKey(['debug:write'])
  const { text, members } = distinctKeysBody(MAX_BODY_BYTES)
  // Encoded once: the probes share this process, and must not wait on the client's own work.
  const body = Buffer.from(text)
  t.ok(members > 75_000, `the body has ${members} distinct member names in ${body.length} bytes`)

  const targets: Array<{ label: string, url: string, headers: Record<string, string> }> = [
    { label: 'POST /echo with an API key', url: `${s.gateway.url}/echo`, headers: { 'x-api-key': key.key, 'x-api-inflection': 'camel' } },
    { label: 'anonymous POST /sessions', url: `${s.gateway.url}/sessions`, headers: { 'x-api-inflection': 'camel' } }
  ]
  for (const target of targets) {
    await t.test(target.label, async (t) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 })
      t.teardown(() => { agent.destroy() })
      const probe = async (): Promise<LoadSample> => await sample({ label: 'healthz', url: `${s.gateway.url}/healthz` }, { agent, requestTimeoutMs: PROBE_DEADLINE_MS })
      const quiet: LoadSample[] = []
      for (let i = 0; i < 25; i++) { quiet.push(await probe()); await new Promise((resolve) => setTimeout(resolve, PROBE_PAUSE_MS)) }

      const endAt = performance.now() + ATTACK_MS
      const sent: Sent[] = []
      const attack = Promise.all(Array.from({ length: BODIES_AT_ONCE }, async () => {
        while (performance.now() < endAt) sent.push(await post(target.url, target.headers, body))
      }))
      const probes: LoadSample[] = []
      while (performance.now() < endAt) {
        probes.push(await probe())
        await new Promise((resolve) => setTimeout(resolve, PROBE_PAUSE_MS))
      }
      await attack

      const before = latency(quiet)
      const during = latency(probes)
      t.comment(`${target.label}: /healthz quiet p50 ${before.p50} ms p99 ${before.p99} ms; under ${BODIES_AT_ONCE} bodies at a time ` +
        `p50 ${during.p50} ms p99 ${during.p99} ms max ${during.max} ms (${during.count} probes, ${sent.length} bodies sent)`)
      t.equal(probes.filter((p) => p.status !== 200).length, 0, 'every probe answered 200')
      t.ok(sent.length >= BODIES_AT_ONCE, `${sent.length} bodies were sent`)
      t.ok(during.p99 < HEALTHZ_P99_MAX_MS, `/healthz p99 ${during.p99} ms < ${HEALTHZ_P99_MAX_MS} ms while the bodies are processed`)
      const statuses = [...new Set(sent.map((x) => x.status ?? x.error))]
      t.comment(`answers to the bodies: ${JSON.stringify(statuses)}; slowest ${Math.round(Math.max(...sent.map((x) => x.ms)))} ms`)
    })
  }
})

t.test('leaks', async (t) => { await leaks.assertNoLeaks(t) })
