import t, { type Test } from 'tap'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { Pool } from 'undici'
import { dispatchDeadline } from '../../gateway/dispatch-deadline.js'

/**
 * The dispatch deadline (gateway/dispatch-deadline.ts) on a real listener and a real
 * undici pool of one connection: a request's headersTimeout counts from dispatch, so a
 * request queued behind a busy connection fails on time; the connection survives the
 * requests that expired in the queue; scope 'whole' covers the body too.
 */

const DEADLINE_MS = 300
/** Scheduling slack on a loaded machine. */
const SLACK_MS = 400

interface Held { request: IncomingMessage, response: ServerResponse }

async function server (t: Test, handle: (request: IncomingMessage, response: ServerResponse) => void) {
  const sockets = new Set<string>()
  const srv = createServer((request, response) => {
    sockets.add(`${request.socket.remotePort ?? 0}`)
    handle(request, response)
  })
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    srv.closeAllConnections()
    await new Promise((resolve) => srv.close(resolve))
  })
  return { url: `http://127.0.0.1:${(srv.address() as { port: number }).port}`, connections: () => sockets.size }
}

function pool (t: Test, url: string, scope: 'headers' | 'whole') {
  const raw = new Pool(url, { connections: 1 })
  t.teardown(async () => { await raw.destroy() })
  return raw.compose(dispatchDeadline(scope))
}

async function timed<T> (work: Promise<T>): Promise<{ ms: number, value?: T, error?: Error & { code?: string } }> {
  const startedAt = performance.now()
  try {
    const value = await work
    return { ms: performance.now() - startedAt, value }
  } catch (error) {
    return { ms: performance.now() - startedAt, error: error as Error }
  }
}

t.test('a request queued behind a busy connection fails at its deadline, counted from dispatch', async (t) => {
  const held: Held[] = []
  const upstream = await server(t, (request, response) => {
    if (request.url === '/hold') held.push({ request, response })
    else response.end('fast')
  })
  const client = pool(t, upstream.url, 'headers')
  // Holds the only connection for longer than the deadline, then answers.
  const first = timed(client.request({ method: 'GET', path: '/hold', headersTimeout: DEADLINE_MS * 10 }))
  while (held.length === 0) await new Promise((resolve) => setTimeout(resolve, 5))
  const queued = await timed(client.request({ method: 'GET', path: '/fast', headersTimeout: DEADLINE_MS }))
  t.equal(queued.error?.code, 'UND_ERR_HEADERS_TIMEOUT', 'the queued request fails with a headers timeout')
  t.ok(queued.ms >= DEADLINE_MS - 5 && queued.ms <= DEADLINE_MS + SLACK_MS, `at its deadline, though no connection took it: ${Math.round(queued.ms)} ms`)
  held[0]?.response.end('held')
  const answered = await first
  t.equal(answered.value?.statusCode, 200, 'the request on the connection is answered')
  await answered.value?.body.text()
  const next = await client.request({ method: 'GET', path: '/fast', headersTimeout: DEADLINE_MS })
  t.equal(await next.body.text(), 'fast', 'the next request is served')
  t.equal(upstream.connections(), 1, 'on the same connection: the expired request was dropped without closing it')
})

t.test('scope headers: the deadline ends with the headers; scope whole: it covers the body', async (t) => {
  const upstream = await server(t, (_request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain' })
    response.write('start ')
    setTimeout(() => response.end('end'), DEADLINE_MS * 2)
  })
  const headersOnly = pool(t, upstream.url, 'headers')
  const streamed = await timed((async () => await (await headersOnly.request({ method: 'GET', path: '/', headersTimeout: DEADLINE_MS, bodyTimeout: DEADLINE_MS * 4 })).body.text())())
  t.equal(streamed.value, 'start end', 'headers scope: a body slower than the deadline (within bodyTimeout) arrives whole')

  const whole = pool(t, upstream.url, 'whole')
  const cut = await timed((async () => await (await whole.request({ method: 'GET', path: '/', headersTimeout: DEADLINE_MS })).body.text())())
  t.equal(cut.error?.code, 'UND_ERR_BODY_TIMEOUT', 'whole scope: the body past the deadline is a body timeout')
  t.ok(cut.ms <= DEADLINE_MS + SLACK_MS, `at the deadline: ${Math.round(cut.ms)} ms`)
})

t.test('an answer in time is untouched; no headersTimeout means no deadline', async (t) => {
  const upstream = await server(t, (_request, response) => { setTimeout(() => response.end('ok'), DEADLINE_MS / 3) })
  const client = pool(t, upstream.url, 'whole')
  const inTime = await client.request({ method: 'GET', path: '/', headersTimeout: DEADLINE_MS })
  t.equal(await inTime.body.text(), 'ok', 'answered within the deadline')
  const unbounded = await client.request({ method: 'GET', path: '/' })
  t.equal(await unbounded.body.text(), 'ok', 'without headersTimeout the request passes untouched')
})
