import { connect } from 'node:net'
import Fastify from 'fastify'
import t, { type Test } from 'tap'
import type { AccessLine } from '../../common/logger.js'
import type { Principal } from '../../gateway/auth/authenticate.js'
import { createRequestPath, type RequestPathStages } from '../../gateway/request-path.js'
import type { ResolvedRoute } from '../../gateway/routing/index.js'
import type { RoutedRequest } from '../../gateway/routing/route-request.js'
import type { Admission } from '../../gateway/traffic/traffic-control.js'

/**
 * A client that leaves while a stage of the request path is waiting (a credential
 * verified at identity, counts read from Redis, a body still arriving) stops the path
 * there: what the traffic stage took for it is given back once, a key not yet let
 * through is not counted as used, and nothing is sent upstream (where a place of its fair share would
 * be taken with no close left to give it back). The stages are stand-ins whose waits the
 * test controls; the request comes over a real socket, and the client really leaves.
 */

const ROUTE = {
  method: 'GET',
  pattern: '/things',
  permission: 'things:read',
  grantedBy: ['things:read'],
  auth: 'key',
  websocket: false,
  upstream: { name: 'things', origin: 'http://127.0.0.1:9' }
} as unknown as ResolvedRoute

const PRINCIPAL = {
  kind: 'key',
  id: 'key_1',
  permissions: ['things:read'],
  permissionSet: new Set(['things:read']),
  forwardedHeaders: [],
  answerHeaders: [],
  deprecation: null,
  secretLookupId: 'lookup_1',
  user: null,
  policies: [],
  accessPrincipal: { type: 'api_key', id: 'key_1' }
} as unknown as Principal

type Stage = 'credential' | 'traffic' | 'body'

interface Deferred<T> { promise: Promise<T>, resolve: (value: T) => void }

function deferred<T> (): Deferred<T> {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((_resolve) => { resolve = _resolve })
  return { promise, resolve }
}

/** A gateway app on the real request path whose `waitAt` stage waits until the test lets it go on. */
async function startPath (t: Test, waitAt: Stage | null) {
  const seen = { admitted: 0, released: 0, uses: 0, proxied: 0, lines: [] as AccessLine[] }
  const reached = deferred<void>()
  const gate = deferred<void>()
  const closed = deferred<void>()
  /** The stage's value, once the test opens the gate when this stage is the one that waits. */
  const at = <T>(stage: Stage, value: T): T | Promise<T> => {
    if (stage !== waitAt) return value
    reached.resolve()
    return gate.promise.then(() => value)
  }
  const stages: RequestPathStages = {
    route: () => ({ kind: 'routed', route: ROUTE, upstreamPath: '/things', search: '', style: null, host: '' } satisfies RoutedRequest),
    authenticate: () => at('credential', PRINCIPAL),
    traffic: {
      admit: () => {
        seen.admitted++
        const admission: Admission = { fields: [], release: () => { seen.released++ } }
        return at('traffic', admission)
      }
    },
    usage: { record: () => { seen.uses++ }, count: () => {} },
    // A body stage that waits resolves to a body; null (no body) is what a GET has, so it stands for one.
    body: () => at<Buffer | null>('body', null) as ReturnType<RequestPathStages['body']>,
    proxy: (exchange) => {
      seen.proxied++
      exchange.reply.hijack()
      exchange.reply.raw.end('{}')
    },
    websocket: () => { throw new Error('no WebSocket route here') },
    refusals: (_request, reply) => {
      reply.hijack()
      reply.raw.destroy()
    },
    requests: { count: () => {} } as unknown as RequestPathStages['requests'],
    accessLog: (line) => {
      seen.lines.push(line)
      closed.resolve()
    },
    closing: () => false
  }
  const serve = createRequestPath(stages)
  const app = Fastify()
  app.get('/things', (request, reply) => { serve(request, reply) })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(async () => { await app.close() })
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return { seen, reached: reached.promise, openGate: () => { gate.resolve() }, closed: closed.promise, port }
}

/** Sends GET /things on a new socket; `leave` destroys it (the client gone). */
function ask (port: number) {
  const socket = connect(port, '127.0.0.1')
  socket.write('GET /things HTTP/1.1\r\nHost: localhost\r\nx-api-key: k\r\n\r\n')
  let received = ''
  socket.on('data', (chunk: Buffer) => { received += chunk.toString() })
  const answered = new Promise<string>((resolve) => socket.on('data', () => { if (received.includes('\r\n\r\n')) resolve(received) }))
  return { leave: () => { socket.destroy() }, answered }
}

/** Lets queued stages run their continuations. */
async function settle (): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve))
}

for (const stage of ['credential', 'traffic', 'body'] as const) {
  t.test(`the client leaves while the ${stage} stage waits: nothing goes upstream, what was taken is given back once`, async (t) => {
    const path = await startPath(t, stage)
    const client = ask(path.port)
    await path.reached
    client.leave()
    await path.closed
    path.openGate()
    await settle()
    t.equal(path.seen.proxied, 0, 'nothing sent upstream')
    // A use is counted when the key is let through, as rate limits count it: before its body is read.
    t.equal(path.seen.uses, stage === 'body' ? 1 : 0, stage === 'body' ? 'the key was let through: one use' : 'no use of the key counted')
    t.equal(path.seen.released, path.seen.admitted, `every admission given back (${path.seen.admitted} taken)`)
    t.ok(path.seen.released <= 1, 'and once')
    t.equal(path.seen.admitted, stage === 'credential' ? 0 : 1, stage === 'credential' ? 'the counts are never read' : 'admitted once')
    t.equal(path.seen.lines.length, 1, 'one access line')
  })
}

t.test('a client that stays is answered, and its admission given back once the answer is over', async (t) => {
  const path = await startPath(t, 'traffic')
  const client = ask(path.port)
  await path.reached
  path.openGate()
  await path.closed
  await settle()
  t.equal(path.seen.proxied, 1, 'sent upstream')
  t.equal(path.seen.uses, 1, 'one use of the key')
  t.equal(path.seen.released, 1, 'the admission given back')
  t.match(await client.answered, /^HTTP\/1\.1 200 /, 'answered')
  client.leave()
})
