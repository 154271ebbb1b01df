import t, { type Test } from 'tap'
import { WebSocket, type RawData } from 'ws'
import { mockUpstreams, startGateway, startStack } from '../helpers/gateway.js'
import { assertProblem } from '../helpers/assert.js'

/**
 * WebSocket routes (`websocket: true`): the upgrade is authenticated, authorised and
 * counted like any request, then proxied to a real WebSocket upstream (upstream-mock's
 * echo). A key revoked or a session ended while its socket is open closes the socket
 * within a second; idle and message-size limits close it too.
 */

interface Opened { socket: WebSocket, upgrade: Record<string, string | string[] | undefined>, handshake: { path: string, query: string, headers: Record<string, string> } }
interface Refused { status: number, body: Record<string, unknown>, headers: Record<string, string | string[] | undefined> }

/** Opens a WebSocket through the gateway: the socket and its handshake echo, or the HTTP refusal. */
async function open (url: string, headers: Record<string, string>): Promise<Opened | Refused> {
  const socket = new WebSocket(url.replace(/^http/, 'ws'), { headers })
  return await new Promise((resolve, reject) => {
    let upgrade: Opened['upgrade'] = {}
    socket.once('upgrade', (response) => { upgrade = response.headers })
    socket.once('message', (data: RawData) => {
      resolve({ socket, upgrade, handshake: (JSON.parse(data.toString()) as { handshake: Opened['handshake'] }).handshake })
    })
    socket.once('unexpected-response', (_request, response) => {
      let text = ''
      response.on('data', (chunk: Buffer) => { text += chunk.toString() })
      response.on('end', () => { resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown>, headers: response.headers }) })
    })
    socket.once('error', reject)
  })
}

function opened (t: Test, result: Opened | Refused, label: string): Opened {
  if ('socket' in result) {
    t.teardown(() => { result.socket.terminate() })
    return result
  }
  throw new Error(`${label}: refused ${result.status} ${JSON.stringify(result.body)}`)
}

async function reply (socket: WebSocket, data: string | Buffer): Promise<RawData> {
  const answer = new Promise<RawData>((resolve) => { socket.once('message', resolve) })
  socket.send(data)
  return await answer
}

async function closed (socket: WebSocket, withinMs: number): Promise<{ code: number, ms: number } | null> {
  const started = performance.now()
  return await new Promise((resolve) => {
    const timer = setTimeout(() => { resolve(null) }, withinMs)
    socket.once('close', (code) => {
      clearTimeout(timer)
      resolve({ code, ms: performance.now() - started })
    })
  })
}

t.test('WebSocket routes', async (t) => {
  const s = await startStack(t, { roles: { reader: ['users:list', 'debug:read'] } })
  const key = await s.createKey(['debug:read'])
  const url = (gatewayUrl: string, path = '/ws/echo?room=7&x=%2F'): string => `${gatewayUrl}${path}`

  await t.test('an upgrade with a key: proxied to the upstream\'s WebSocket, with the principal and the checked path', async (t) => {
    const { socket, upgrade, handshake } = opened(t, await open(url(s.gateway.url), { 'x-api-key': key.key }), 'open')
    t.equal(handshake.path, '/ws/echo', 'the upstream path')
    t.equal(handshake.query, '?room=7&x=%2F', 'the query exactly as sent')
    t.equal(handshake.headers['x-portier-principal'], key.id, 'the principal')
    t.equal(handshake.headers['x-portier-principal-type'], 'key')
    t.equal(handshake.headers['x-portier-permissions'], 'debug:read')
    t.notOk('x-api-key' in handshake.headers, 'never the key itself')
    t.equal(typeof upgrade['x-request-id'], 'string', 'the 101 carries the request id')
    t.equal(handshake.headers['x-request-id'], upgrade['x-request-id'], 'the one the upstream got')
    t.equal((await reply(socket, 'hello')).toString(), 'hello', 'text echoed')
    const binary = Buffer.from([0, 1, 2, 255])
    t.same(Buffer.from(await reply(socket, binary) as Buffer), binary, 'binary echoed')
  })

  await t.test('an upgrade with a token', async (t) => {
    const tokens = await s.login()
    const { handshake } = opened(t, await open(url(s.gateway.url), { authorization: `Bearer ${tokens.access_token}` }), 'open')
    t.equal(handshake.headers['x-portier-principal'], s.userId)
    t.notOk('authorization' in handshake.headers, 'never the token itself')
  })

  await t.test('refused like any request', async (t) => {
    const none = await open(url(s.gateway.url), {})
    t.match(none, { status: 401, body: { code: 'credentials_missing' } }, 'no credential: 401')
    const users = await s.createKey(['users:list'])
    t.match(await open(url(s.gateway.url), { 'x-api-key': users.key }), { status: 403, body: { code: 'permission_denied', missing_permission: 'debug:read' } }, 'no permission: 403')
    t.match(await open(url(s.gateway.url), { 'x-api-key': 'ptk_nope' }), { status: 401, body: { code: 'invalid_api_key' } }, 'a bad key: 401')
    t.match(await open(url(s.gateway.url, '/ws/nowhere'), { 'x-api-key': key.key }), { status: 404 }, 'no route: 404')
    assertProblem(t, await s.gateway.call('/ws/echo', { headers: { 'x-api-key': key.key } }), 426, 'websocket_upgrade_required', 'a plain GET to a WebSocket route')
  })

  await t.test('counted like any request: past its rate limit, an upgrade is a 429', async (t) => {
    const limited = await s.createKey(['debug:read'], { policies: [{ name: 'ws-opens', kind: 'rate', limit: 2, window_seconds: 60, partition: 'key' }] })
    for (let i = 0; i < 2; i++) {
      const { upgrade } = opened(t, await open(url(s.gateway.url), { 'x-api-key': limited.key }), `open ${i + 1}`)
      t.match(upgrade.ratelimit, /"ws-opens";r=\d+/, `open ${i + 1}: the 101 carries its RateLimit`)
    }
    t.match(await open(url(s.gateway.url), { 'x-api-key': limited.key }), { status: 429, body: { code: 'rate_limited' } }, 'the third: 429')
  })

  await t.test('a key revoked while its socket is open closes the socket within a second', async (t) => {
    const doomed = await s.createKey(['debug:read'])
    const { socket } = opened(t, await open(url(s.gateway.url), { 'x-api-key': doomed.key }), 'open')
    const other = opened(t, await open(url(s.gateway.url), { 'x-api-key': key.key }), 'open another')
    const closing = closed(socket, 5_000)
    t.equal((await s.admin('POST', `/admin/keys/${doomed.id}/revoke`)).status, 200, 'revoked')
    const outcome = await closing
    t.ok(outcome !== null && outcome.ms < 1_000, `closed in ${Math.round(outcome?.ms ?? -1)} ms`)
    t.equal(outcome?.code, 1008, 'with 1008 (policy violation)')
    t.equal((await reply(other.socket, 'still here')).toString(), 'still here', 'another key\'s socket stays open')
  })

  await t.test('a session ended while its socket is open closes the socket within a second', async (t) => {
    const tokens = await s.login()
    const { socket } = opened(t, await open(url(s.gateway.url), { authorization: `Bearer ${tokens.access_token}` }), 'open')
    const closing = closed(socket, 5_000)
    t.equal((await s.logout(tokens.access_token)).status, 204, 'logged out')
    const outcome = await closing
    t.ok(outcome !== null && outcome.ms < 1_000, `closed in ${Math.round(outcome?.ms ?? -1)} ms`)
    t.equal(outcome?.code, 1008)
  })

  await t.test('idle and message-size limits', async (t) => {
    const gateway = await startGateway(t, { ...s.gatewaySetup, upstreams: mockUpstreams(s.upstreamUrl), options: { webSocketIdleSeconds: 1, webSocketMaxMessageBytes: 4_096 } })
    const { socket } = opened(t, await open(url(gateway.url), { 'x-api-key': key.key }), 'open')
    const large = closed(socket, 3_000)
    socket.send(Buffer.alloc(8_192, 0x61))
    t.equal((await large)?.code, 1009, 'a message over the limit: 1009')

    const busy = opened(t, await open(url(gateway.url), { 'x-api-key': key.key }), 'open a busy one')
    const idle = opened(t, await open(url(gateway.url), { 'x-api-key': key.key }), 'open an idle one')
    const idleClosed = closed(idle.socket, 4_000)
    const busyClosed = closed(busy.socket, 2_500)
    for (let i = 0; i < 6; i++) {
      await new Promise((resolve) => setTimeout(resolve, 300))
      await reply(busy.socket, `ping ${i}`)
    }
    const idleOutcome = await idleClosed
    t.equal(idleOutcome?.code, 1001, 'a second without a message: 1001')
    t.ok(idleOutcome !== null && idleOutcome.ms >= 900 && idleOutcome.ms < 1_600, `closed a second after its last message, not later (${Math.round(idleOutcome?.ms ?? -1)} ms)`)
    t.equal(await busyClosed, null, 'a socket with messages stays open')
  })
})
