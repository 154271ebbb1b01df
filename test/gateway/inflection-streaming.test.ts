import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import { once } from 'node:events'
import { writeFileSync, readFileSync } from 'node:fs'
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join, relative } from 'node:path'
import { Readable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { createGzip } from 'node:zlib'
import { assertProblem, PROBLEM_JSON } from '../helpers/assert.js'
import { startGateway, startStack } from '../helpers/gateway.js'
import { http } from '../helpers/http.js'
import { startServerProcess } from '../helpers/process-stack.js'
import { freePort } from '../helpers/redis.js'
import { REPO_ROOT } from '../helpers/repo-root.js'
import { tempDir } from '../helpers/temp.js'

/**
 * Inflection over real sockets, as it streams: a node:http upstream of the test's own
 * serves exact bytes, paused, gzipped, broken or endless bodies and records the request
 * bodies it receives. Values reach the client byte for byte with only the member names
 * renamed; a client's keys go back in the upstream's own spelling; a large body streams
 * (chunked, never held) and a broken one is a 502 while it is held, a cut response after;
 * memory stays flat over 200 MB and the event loop keeps answering.
 */

const HOLD_BYTES = 262_144
type Style = 'camel' | 'pascal' | 'dash' | 'snake'
type Names = Record<string, Record<Style, string>>

/** Every upstream (snake) name the suite uses, as each style writes it: by hand, not by the gateway's rules. */
const NAMES: Names = {
  order_id: { camel: 'orderId', pascal: 'OrderId', dash: 'order-id', snake: 'order_id' },
  limit: { camel: 'limit', pascal: 'Limit', dash: 'limit', snake: 'limit' },
  neg: { camel: 'neg', pascal: 'Neg', dash: 'neg', snake: 'neg' },
  one: { camel: 'one', pascal: 'One', dash: 'one', snake: 'one' },
  exp: { camel: 'exp', pascal: 'Exp', dash: 'exp', snake: 'exp' },
  s: { camel: 's', pascal: 'S', dash: 's', snake: 's' },
  street_line_1: { camel: 'streetLine1', pascal: 'StreetLine1', dash: 'street-line-1', snake: 'street_line_1' },
  address_line1: { camel: 'addressLine1', pascal: 'AddressLine1', dash: 'address-line1', snake: 'address_line1' },
  x_a_b: { camel: 'xAB', pascal: 'XAB', dash: 'x-a-b', snake: 'x_a_b' },
  v2_api: { camel: 'v2Api', pascal: 'V2Api', dash: 'v2-api', snake: 'v2_api' },
  nested_obj: { camel: 'nestedObj', pascal: 'NestedObj', dash: 'nested-obj', snake: 'nested_obj' },
  is_done: { camel: 'isDone', pascal: 'IsDone', dash: 'is-done', snake: 'is_done' },
  http_server_url: { camel: 'httpServerUrl', pascal: 'HttpServerUrl', dash: 'http-server-url', snake: 'http_server_url' }
}
const STYLES: Style[] = ['camel', 'pascal', 'dash', 'snake']
type Namer = (name: string) => string
const upstreamNames: Namer = (name) => name
const namesIn = (style: Style): Namer => (name) => (NAMES[name] as Record<Style, string>)[style]

/** Values a parse-and-stringify would change, in odd whitespace; `\u00e9`, `\\` and `\"` as escapes. */
const exactValues = (n: Namer): string =>
  `{\n\t"${n('order_id')}" :\r\n 12345678901234567891 ,"${n('limit')}":1e400,  "${n('neg')}": -0,"${n('one')}"  :1.0,` +
  `"${n('exp')}":1E+2 , "${n('s')}": "a\\u00e9\\\\\\"b",\n  "${n('nested_obj')}" : [ { "${n('is_done')}" :true } , null, {} ],` +
  `"${n('street_line_1')}": "x"   }\n`

/** Names whose spelling the rules alone cannot give back from camel or pascal (street_line_1, x_a_b). */
const account = (n: Namer): string =>
  `{"${n('street_line_1')}":"1 Rue","${n('address_line1')}":"b","${n('x_a_b')}":[1,{"${n('v2_api')}":true}],` +
  `"${n('http_server_url')}":"http://h","${n('order_id')}":12345678901234567891}`

/** One array element of the generated bodies (about 140 bytes). */
const record = (n: Namer): string =>
  `{"${n('order_id')}":12345678901234567891,"${n('street_line_1')}":"${'x'.repeat(40)}",` +
  `"${n('nested_obj')}":{"${n('is_done')}":true,"${n('x_a_b')}":[1e400,-0,"a\\"b"]}}`

const BLOCK_RECORDS = 450 // about 64 KiB a block
const RECORD_BYTES = Buffer.byteLength(record(upstreamNames))

/**
 * A JSON array of about `bytes` bytes (as the upstream writes it) of records, in blocks;
 * every style has the same records. `tail` replaces the closing `]` (to break the text).
 */
function * arrayBody (n: Namer, bytes: number, tail = ']'): Generator<Buffer> {
  const one = record(n)
  const total = Math.max(1, Math.round(bytes / (RECORD_BYTES + 1)))
  const full = Buffer.from(Array(BLOCK_RECORDS).fill(one).join(','))
  const comma = Buffer.from(',')
  yield Buffer.from('[')
  for (let at = 0; at < total; at += BLOCK_RECORDS) {
    const count = Math.min(BLOCK_RECORDS, total - at)
    if (at > 0) yield comma
    yield count === BLOCK_RECORDS ? full : Buffer.from(Array(count).fill(one).join(','))
  }
  yield Buffer.from(tail)
}
const lengthOf = (chunks: Iterable<Buffer>): number => {
  let total = 0
  for (const chunk of chunks) total += chunk.length
  return total
}
const sha256Of = (chunks: Iterable<Buffer>): string => {
  const hash = createHash('sha256')
  for (const chunk of chunks) hash.update(chunk)
  return hash.digest('hex')
}

/** The upstream: a plain node:http server whose answers each case sets, recording the request bodies it gets. */
interface Upstream {
  url: string
  /** Every request, in order: method, path and the body's raw text. */
  requests: Array<{ method: string, path: string, body: string, contentLength: string | undefined }>
  /** Fixed bodies by path (sent with a Content-Length). */
  fixed: Map<string, string>
  /** Let the paused body finish. */
  release: () => void
  /** Whether the paused body has been written to its end. */
  pausedDone: () => boolean
  /** Whether the endless body's connection has been closed (by the gateway). */
  endlessClosed: () => boolean
}

async function startUpstream (t: Test): Promise<Upstream> {
  const requests: Upstream['requests'] = []
  const fixed = new Map<string, string>()
  let release: () => void = () => {}
  const released = new Promise<void>((resolve) => { release = resolve })
  let pausedDone = false
  let endlessClosed = false

  const json = (res: ServerResponse, status = 200, extra: Record<string, string> = {}): void => {
    res.writeHead(status, { 'content-type': 'application/json', ...extra })
  }
  const stream = (res: ServerResponse, chunks: Iterable<Buffer> | AsyncIterable<Buffer>, extra: Record<string, string> = {}): Readable => {
    json(res, 200, extra)
    const source = Readable.from(chunks, { objectMode: false })
    source.pipe(res)
    res.once('close', () => { source.destroy() })
    return source
  }
  /** Writes `chunks`, waits for the gateway to read them, then resets the connection (RST). */
  const resetAfter = (res: ServerResponse, chunks: Iterable<Buffer>): void => {
    json(res)
    const source = Readable.from(chunks, { objectMode: false })
    source.pipe(res, { end: false })
    source.once('end', () => {
      setTimeout(() => { res.socket?.resetAndDestroy() }, 300)
    })
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const parts: Buffer[] = []
    req.on('data', (chunk: Buffer) => parts.push(chunk))
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0] as string
      requests.push({ method: req.method ?? '', path, body: Buffer.concat(parts).toString('utf8'), contentLength: req.headers['content-length'] })
      const size = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('bytes') ?? '0')
      const body = fixed.get(path)
      if (body !== undefined) {
        json(res, 200, { 'content-length': String(Buffer.byteLength(body)) })
        res.end(body)
      } else if (path === '/s/echo') {
        json(res)
        res.end('{"received_it":true}')
      } else if (path === '/s/chunked-small') {
        // No Content-Length from the upstream: the gateway still gives one.
        stream(res, (async function * () { yield Buffer.from('{"order_id":1,'); await sleep(20); yield Buffer.from('"is_done":true}') })())
      } else if (path === '/s/generated') {
        stream(res, arrayBody(upstreamNames, size))
      } else if (path === '/s/paused') {
        stream(res, (async function * () {
          let written = 0
          for (const chunk of arrayBody(upstreamNames, size)) {
            if (written >= size / 2) await released // after about half the body
            yield chunk
            written += chunk.length
          }
          pausedDone = true
        })())
      } else if (path === '/s/endless') {
        // A body that never ends: only the gateway closing the connection stops it.
        res.once('close', () => { endlessClosed = true })
        stream(res, (function * () {
          const block = Buffer.from(Array(BLOCK_RECORDS).fill(record(upstreamNames)).join(','))
          const comma = Buffer.from(',')
          yield Buffer.from('[')
          yield block
          for (;;) { yield comma; yield block }
        })())
      } else if (path === '/s/invalid-small') {
        stream(res, (async function * () { yield Buffer.from('{"order_id": 1, "is_done": tru'); await sleep(20); yield Buffer.from('x}') })())
      } else if (path === '/s/invalid-large') {
        stream(res, arrayBody(upstreamNames, size, ',}garbage]'))
      } else if (path === '/s/reset-small') {
        resetAfter(res, [Buffer.from('{"order_id": 1, "is_done"')])
      } else if (path === '/s/reset-large') {
        resetAfter(res, arrayBody(upstreamNames, size, ''))
      } else if (path === '/s/gzip') {
        json(res, 200, { 'content-encoding': 'gzip' })
        const source = Readable.from(arrayBody(upstreamNames, size), { objectMode: false })
        source.pipe(createGzip()).pipe(res)
      } else {
        res.writeHead(404, { 'content-type': 'application/json' })
        res.end('{"not_found":true}')
      }
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    fixed,
    release: () => { release() },
    pausedDone: () => pausedDone,
    endlessClosed: () => endlessClosed
  }
}

/** What a client got: status, headers, the body's bytes (or their hash and count), and whether it ended cleanly. */
interface Received {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: Buffer
  bytes: number
  sha256: string
  complete: boolean
  error: string | null
}

interface ReceiveOptions {
  method?: string
  headers?: Record<string, string>
  body?: string
  /** Keep the body (otherwise only its hash and length). */
  keep?: boolean
  onData?: (total: number) => void
}

/** One request over node:http (no connection reuse, no decompression), reading the answer however it ends. */
async function receive (base: string, path: string, options: ReceiveOptions = {}): Promise<Received> {
  const { hostname, port } = new URL(base)
  return await new Promise((resolve) => {
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers }
    if (options.body !== undefined) {
      headers['content-type'] ??= 'application/json'
      headers['content-length'] = String(Buffer.byteLength(options.body))
    }
    const req = httpRequest({ host: hostname, port, path, method: options.method ?? 'GET', agent: false, headers }, (res) => {
      const hash = createHash('sha256')
      const kept: Buffer[] = []
      let bytes = 0
      let error: string | null = null
      res.on('data', (chunk: Buffer) => {
        bytes += chunk.length
        hash.update(chunk)
        if (options.keep === true) kept.push(chunk)
        options.onData?.(bytes)
      })
      res.on('error', (err) => { error = err.message })
      res.on('close', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(kept), bytes, sha256: hash.digest('hex'), complete: res.complete && error === null, error })
      })
    })
    req.on('error', (err) => {
      resolve({ status: 0, headers: {}, body: Buffer.alloc(0), bytes: 0, sha256: '', complete: false, error: err.message })
    })
    req.end(options.body)
  })
}

const parses = (body: Buffer): boolean => {
  try { JSON.parse(body.toString('utf8')); return true } catch { return false }
}

/** One snake_case upstream, the test's own server, on every path under /s/. */
const streamUpstreams = (target: string): { upstreams: unknown[] } => ({
  upstreams: [{
    name: 'stream-service',
    target,
    keyCase: 'snake',
    routes: [
      { method: 'GET', path: '/s/*', permission: 'stream:read' },
      { method: 'POST', path: '/s/*', permission: 'stream:write' }
    ]
  }]
})

t.test('inflection as it streams, over real sockets', async (t) => {
  const s = await startStack(t)
  const upstream = await startUpstream(t)
  const gateway = await startGateway(t, { ...s.gatewaySetup, upstreams: streamUpstreams(upstream.url) })
  const key = await s.createKey(['stream:read', 'stream:write'])
  const readOnlyKey = await s.createKey(['stream:read'])
  const as = (style?: Style): Record<string, string> => ({ 'x-api-key': key.key, ...(style !== undefined ? { 'x-api-inflection': style } : {}) })
  const get = async (gw: { url: string }, path: string, style?: Style, extra: ReceiveOptions = {}): Promise<Received> =>
    await receive(gw.url, path, { keep: true, ...extra, headers: { ...as(style), ...extra.headers } })

  t.test('values pass exactly; only the names change', async (t) => {
    upstream.fixed.set('/s/exact', exactValues(upstreamNames))
    const texts = new Map<Style, string>()
    for (const style of STYLES) {
      const answer = await get(gateway, '/s/exact', style)
      texts.set(style, answer.body.toString('utf8'))
      t.equal(answer.status, 200, `${style}: 200`)
      t.equal(answer.body.toString('utf8'), exactValues(namesIn(style)), `${style}: the upstream's bytes with only the names renamed`)
      t.equal(answer.headers['content-length'], String(answer.body.length), `${style}: a small body comes with its Content-Length`)
    }
    t.equal(texts.get('camel'),
      '{\n\t"orderId" :\r\n 12345678901234567891 ,"limit":1e400,  "neg": -0,"one"  :1.0,"exp":1E+2 , "s": "a\\u00e9\\\\\\"b",' +
      '\n  "nestedObj" : [ { "isDone" :true } , null, {} ],"streetLine1": "x"   }\n', 'camel, written out in full')

    const plain = await get(gateway, '/s/exact')
    t.equal(plain.status, 200, 'without the header: 200')
    t.ok(plain.body.equals(Buffer.from(exactValues(upstreamNames))), 'without the header: byte for byte the upstream\'s')
  })

  t.test('a client\'s keys go back in the upstream\'s own spelling', async (t) => {
    upstream.fixed.set('/s/account', account(upstreamNames))
    for (const style of ['camel', 'pascal', 'dash'] as const) {
      const got = await get(gateway, '/s/account', style)
      t.equal(got.body.toString(), account(namesIn(style)), `${style}: the client reads the names in ${style}`)
      const before = upstream.requests.length
      const posted = await receive(gateway.url, '/s/echo', { method: 'POST', headers: as(style), body: got.body.toString(), keep: true })
      t.equal(posted.status, 200, `${style}: POST back 200`)
      const seen = upstream.requests[before]
      t.equal(seen?.body, account(upstreamNames), `${style}: the upstream receives exactly its own text (street_line_1, x_a_b, v2_api …)`)
      t.equal(seen?.contentLength, String(Buffer.byteLength(account(upstreamNames))), `${style}: with the Content-Length of that text`)
    }

    // Never sent by this upstream: the rules decide (a digit continues a word, one-letter words join).
    const before = upstream.requests.length
    await receive(gateway.url, '/s/echo', { method: 'POST', headers: as('camel'), body: '{"billingLine1": 1, "xYZ": {"streetLine1": 2}}' })
    t.equal(upstream.requests[before]?.body, '{"billing_line1": 1, "x_yz": {"street_line_1": 2}}',
      'camel keys never seen follow the rules (billing_line1, x_yz); a learned one nested deeper still reverses (street_line_1)')
    await receive(gateway.url, '/s/echo', { method: 'POST', headers: as('pascal'), body: '{"BillingLine1":1,"HttpServerUrl":"u"}' })
    t.equal(upstream.requests[before + 1]?.body, '{"billing_line1":1,"http_server_url":"u"}', 'pascal too')

    for (const [label, body] of [
      ['two unknown names', '{"fooBar": 1, "foo_bar": 2}'],
      ['a learned name and its upstream spelling', '{"streetLine1": 1, "street_line_1": 2}'],
      ['nested', '{"a": [{"xAB": 1, "x_a_b": 2}]}']
    ] as const) {
      const count = upstream.requests.length
      const refused = await http(`${gateway.url}/s/echo`, { headers: as('camel'), body })
      assertProblem(t, refused, 400, 'duplicate_member', `${label}: 400 duplicate_member`)
      t.equal(upstream.requests.length, count, `${label}: the upstream is not called`)
    }
  })

  t.test('a large body streams; a small one is held and sent with its length', async (t) => {
    const size = 2 * 1_048_576
    let receivedBeforeRelease = 0
    let released = false
    const answerPromise = receive(gateway.url, `/s/paused?bytes=${size}`, {
      headers: as('camel'),
      onData: (total) => { if (!released) receivedBeforeRelease = total }
    })
    const deadline = Date.now() + 5_000
    while (receivedBeforeRelease <= HOLD_BYTES * 2 && Date.now() < deadline) await sleep(20)
    const finishedEarly = upstream.pausedDone()
    released = true
    upstream.release()
    const answer = await answerPromise
    t.notOk(finishedEarly, 'the upstream was still waiting …')
    t.ok(receivedBeforeRelease > HOLD_BYTES * 2, `… while the client already had ${receivedBeforeRelease} inflected bytes (more than the hold, ${HOLD_BYTES})`)
    t.equal(answer.status, 200, '200')
    t.equal(answer.headers['content-length'], undefined, 'no Content-Length')
    // Chunked framing is what lets a client tell a cut (below) from the end of the body.
    t.equal(answer.headers['transfer-encoding'], 'chunked', 'chunked')
    t.ok(answer.complete, 'the body ends cleanly')
    t.equal(answer.sha256, sha256Of(arrayBody(namesIn('camel'), size)), 'and is the whole body, renamed')

    const small = await get(gateway, '/s/chunked-small', 'camel')
    t.equal(small.body.toString(), '{"orderId":1,"isDone":true}', 'a small chunked upstream body, renamed')
    t.equal(small.headers['content-length'], String(small.body.length), 'comes with a Content-Length')
    t.equal(small.headers['transfer-encoding'], undefined, 'not chunked')
  })

  t.test('a client that goes away mid-stream: the upstream connection is closed, the gateway serves on', async (t) => {
    const { hostname, port } = new URL(gateway.url)
    const received = await new Promise<number>((resolve) => {
      const req = httpRequest({ host: hostname, port, path: '/s/endless', agent: false, headers: { accept: 'application/json', ...as('camel') } }, (res) => {
        let bytes = 0
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length
          if (bytes > HOLD_BYTES * 4) req.destroy()
        })
        res.on('error', () => {})
        res.on('close', () => { resolve(bytes) })
      })
      req.on('error', () => {})
      req.end()
    })
    t.ok(received > HOLD_BYTES * 4, `the client read ${received} bytes, then hung up`)
    const deadline = Date.now() + 5_000
    while (!upstream.endlessClosed() && Date.now() < deadline) await sleep(20)
    t.ok(upstream.endlessClosed(), 'the gateway closed its upstream connection: it does not keep reading a body nobody wants')
    t.equal((await http(`${gateway.url}/healthz`)).status, 200, 'and keeps serving')
  })

  t.test('invalid JSON and a reset upstream', async (t) => {
    const small = await get(gateway, '/s/invalid-small', 'camel')
    t.equal(small.status, 502, 'small invalid body: 502')
    t.equal(small.headers['content-type'], PROBLEM_JSON, 'a problem')
    t.match(JSON.parse(small.body.toString()), { code: 'upstream_body_not_inflectable', status: 502, detail: /not valid JSON/ }, 'upstream_body_not_inflectable')
    t.notMatch(small.body.toString(), /orderId|order_id/, 'nothing of the upstream\'s body')

    const large = await get(gateway, `/s/invalid-large?bytes=${2 * 1_048_576}`, 'camel', { keep: true })
    t.equal(large.status, 200, 'large body invalid after 2 MB: the 200 had been sent')
    t.notOk(large.complete, `then the response is cut (${large.error ?? 'premature end'}, after ${large.bytes} bytes)`)
    t.ok(large.bytes > HOLD_BYTES, 'after the held part streamed')
    t.notOk(parses(large.body), 'the client never has a body that parses')
    t.notMatch(large.body.subarray(-64).toString(), /garbage/, 'the invalid bytes are not forwarded')

    const resetSmall = await get(gateway, '/s/reset-small', 'camel')
    t.equal(resetSmall.status, 502, 'an upstream reset within the held part: 502')
    t.match(JSON.parse(resetSmall.body.toString() || '{}'), { code: 'upstream_unavailable' }, 'upstream_unavailable')

    const resetLarge = await get(gateway, `/s/reset-large?bytes=${2 * 1_048_576}`, 'camel', { keep: true })
    t.equal(resetLarge.status, 200, 'an upstream reset after 2 MB: the 200 had been sent')
    t.notOk(resetLarge.complete, `then the response is cut (${resetLarge.error ?? 'premature end'}, after ${resetLarge.bytes} bytes)`)
    t.notOk(parses(resetLarge.body), 'never a body that parses')

    t.equal((await gateway.call('/healthz')).status, 200, 'the gateway keeps serving: /healthz 200')
    const after = await get(gateway, '/s/exact', 'camel')
    t.equal(after.body.toString(), exactValues(namesIn('camel')), 'and inflects the next request')
  })

  t.test('a gzip body of several MB is decoded as it streams and inflected', async (t) => {
    const size = 6 * 1_048_576
    const answer = await receive(gateway.url, `/s/gzip?bytes=${size}`, { headers: as('dash') })
    t.equal(answer.status, 200, '200')
    t.equal(answer.headers['content-encoding'], undefined, 'no Content-Encoding to the client')
    t.ok(answer.complete, 'complete')
    t.equal(answer.bytes, lengthOf(arrayBody(namesIn('dash'), size)), 'the decoded length, renamed')
    t.equal(answer.sha256, sha256Of(arrayBody(namesIn('dash'), size)), 'the decoded body, renamed to dash')
  })

  t.test('the event loop keeps answering while 10 MB are inflected', async (t) => {
    const size = 10 * 1_048_576
    let done = false
    const transfer = receive(gateway.url, `/s/generated?bytes=${size}`, { headers: as('camel') }).finally(() => { done = true })
    const latencies: number[] = []
    const statuses = new Set<number>()
    let during = 0
    while (!done) {
      const started = performance.now()
      const probe = await http(`${gateway.url}/healthz`)
      latencies.push(performance.now() - started)
      statuses.add(probe.status)
      if (!done) during++
    }
    t.same([...statuses], [200], 'every /healthz probe answered 200')
    const answer = await transfer
    t.ok(answer.complete && answer.status === 200, 'the 10 MB answer completes')
    t.ok(during >= 3, `/healthz answered ${during} times while the body was inflected`)
    const max = Math.max(...latencies)
    t.ok(max < 1_000, 'each within a second')
    t.comment(`healthz during a 10 MB inflection: ${latencies.length} probes, max ${max.toFixed(1)} ms`)
  })

  t.test('problem bodies the gateway makes: standard members kept, extensions renamed', async (t) => {
    // upstream_body_not_inflectable has no extension member: under pascal its standard members still keep their names.
    const notInflectable = await http(`${gateway.url}/s/invalid-small`, { headers: as('pascal') })
    t.same(Object.keys(notInflectable.body).sort(), ['code', 'detail', 'status', 'title', 'type'], 'pascal: type, title, status, detail, code')
    const duplicate = await http(`${gateway.url}/s/echo`, { headers: as('pascal'), body: '{"A":1,"a":2}' })
    t.equal(duplicate.status, 400, 'duplicate_member under pascal')
    t.same(Object.keys(duplicate.body).sort(), ['code', 'detail', 'status', 'title', 'type'], 'pascal: its members keep their names')

    // permission_denied carries missing_permission, which follows the requested case even though the gate refused the request.
    for (const [style, name] of [['camel', 'missingPermission'], ['pascal', 'MissingPermission'], ['dash', 'missing-permission']] as const) {
      const denied = await http(`${gateway.url}/s/echo`, { headers: { 'x-api-key': readOnlyKey.key, 'x-api-inflection': style }, body: '{}' })
      assertProblem(t, denied, 403, 'permission_denied', `${style}: 403`)
      t.same(Object.keys(denied.body).filter((member) => !['type', 'title', 'status', 'detail', 'code'].includes(member)), [name],
        `${style}: the extension member is ${name}`, { body: denied.body })
      t.equal(denied.body[name], 'stream:write', `${style}: and names stream:write`)
    }
  })

  t.test('maxInflectedResponseBytes', async (t) => {
    const limited = await startGateway(t, { ...s.gatewaySetup, upstreams: streamUpstreams(upstream.url), options: { maxInflectedResponseBytes: 65_536 } })
    const small = await get(limited, `/s/generated?bytes=${32 * 1024}`, 'camel')
    t.equal(small.status, 200, 'a 32 KiB body passes under a 64 KiB limit')
    t.ok(small.body.equals(Buffer.concat([...arrayBody(namesIn('camel'), 32 * 1024)])), `renamed, whole (${small.body.length} bytes)`)

    const large = await get(limited, `/s/generated?bytes=${128 * 1024}`, 'camel')
    t.equal(large.status, 502, 'a 128 KiB body (hold 256 KiB): 502 before any byte of it')
    t.equal(large.headers['content-type'], PROBLEM_JSON, 'a problem')
    t.match(JSON.parse(large.body.toString()), { code: 'upstream_body_not_inflectable', detail: /larger than 65536 bytes/ }, 'upstream_body_not_inflectable: larger than 65536 bytes')
  })

  t.test('memory stays flat over a 200 MB inflected body (gateway in its own process)', async (t) => {
    const dir = tempDir(t)
    const upstreamsFile = join(dir, 'upstreams.json')
    writeFileSync(upstreamsFile, JSON.stringify(streamUpstreams(upstream.url)))
    const port = await freePort()
    // The gateway built beside this test (dist/ or another outDir).
    const entry = relative(REPO_ROOT, fileURLToPath(new URL('../../gateway/server.js', import.meta.url)))
    const child = await startServerProcess(t, {
      name: 'gateway',
      entry,
      url: `http://127.0.0.1:${port}`,
      readyPath: '/readyz',
      env: {
        GATEWAY_HOST: '127.0.0.1',
        GATEWAY_PORT: String(port),
        GATEWAY_METRICS_PORT: '0',
        GATEWAY_UPSTREAMS_FILE: upstreamsFile,
        GATEWAY_WATCH_UPSTREAMS: 'false',
        IDENTITY_PUBLIC_URL: s.publicUrl,
        IDENTITY_INTERNAL_URL: s.adminUrl,
        IDENTITY_SERVICE_TOKEN: s.serviceToken,
        IDENTITY_EVENTS_CHANNEL: s.config.eventsChannel,
        REDIS_URL: s.redis.url,
        LOG_LEVEL: 'warn'
      }
    })
    const pid = child.child().pid as number
    const rss = (): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) * 1024

    // Warm up (JIT, pools, buffers) before the baseline.
    const warm = await receive(child.url, `/s/generated?bytes=${8 * 1_048_576}`, { headers: as('camel') })
    t.ok(warm.complete, 'a warm-up body of 8 MB')
    const baseline = rss()
    let peak = baseline
    const sampler = setInterval(() => { peak = Math.max(peak, rss()) }, 25)
    const size = 200 * 1_048_576
    const started = performance.now()
    const answer = await receive(child.url, `/s/generated?bytes=${size}`, { headers: as('camel') })
    const seconds = (performance.now() - started) / 1000
    clearInterval(sampler)
    peak = Math.max(peak, rss())
    t.ok(answer.complete && answer.status === 200, '200 MB inflected, to the end')
    t.equal(answer.bytes, lengthOf(arrayBody(namesIn('camel'), size)), 'every byte of it')
    const growth = peak - baseline
    t.ok(growth < 96 * 1_048_576, 'the gateway\'s RSS grows by well under the body\'s size (< 96 MiB)')
    t.comment(`gateway RSS: baseline ${(baseline / 1_048_576).toFixed(1)} MiB, peak ${(peak / 1_048_576).toFixed(1)} MiB, ` +
      `growth ${(growth / 1_048_576).toFixed(1)} MiB over ${(answer.bytes / 1_048_576).toFixed(0)} MiB in ${seconds.toFixed(1)} s`)
  })
})
