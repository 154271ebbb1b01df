import t, { type Test } from 'tap'
import { Agent, createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { freePort } from '../../harness/ports.js'
import { startServerProcess } from '../helpers/process-stack.js'

/**
 * The processes the throughput scenarios run against and through, over real sockets:
 * the static upstream answers precomputed pages with a length and keeps connections
 * open, and the node floor passes status, end-to-end headers and body, and nothing
 * hop-by-hop, either way.
 */

interface Answer { status: number, headers: IncomingHttpHeaders, body: Buffer, localPort: number }

/** One request on `agent`'s connection; the local port tells whether a connection was reused. */
async function get (url: string, agent: Agent, headers: Record<string, string> = {}): Promise<Answer> {
  const req = httpRequest(url, { agent, headers })
  req.end()
  const [res] = await once(req, 'response') as [IncomingMessage]
  // read before the body: the socket goes back to the agent once the answer is consumed
  const localPort = (res.socket.address() as AddressInfo).port
  const chunks: Buffer[] = []
  for await (const chunk of res) chunks.push(chunk as Buffer)
  return { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), localPort }
}

async function startStaticUpstream (t: Test): Promise<string> {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  await startServerProcess(t, { name: 'static-upstream', entry: 'dist/bench/static-upstream/server.js', env: { STATIC_UPSTREAM_PORT: String(port) }, url, readyPath: '/healthz' })
  return url
}

t.test('the static upstream answers precomputed users pages of about 1, 7 and 30 KB, with a length, on a kept-alive connection', async (t) => {
  const url = await startStaticUpstream(t)
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => { agent.destroy() })
  const sizes = { '1k': 1024, '7k': 7 * 1024, '30k': 30 * 1024 }
  const ports = new Set<number>()
  for (const [size, bytes] of Object.entries(sizes)) {
    const answer = await get(`${url}/users?size=${size}`, agent)
    ports.add(answer.localPort)
    t.equal(answer.status, 200, `${size}: 200`)
    t.equal(answer.headers['content-type'], 'application/json', `${size}: JSON`)
    t.equal(answer.headers['content-length'], String(answer.body.length), `${size}: a content-length, no chunking`)
    t.equal(answer.headers['transfer-encoding'], undefined)
    t.ok(Math.abs(answer.body.length - bytes) < 0.1 * bytes, `${size}: ${answer.body.length} bytes is within 10 % of ${bytes}`)
    const page = JSON.parse(answer.body.toString('utf8')) as { users: Array<Record<string, unknown>>, meta: { per_page: number } }
    t.match(page.users[0], { id: 1, first_name: String, last_name: String, email_address: String, is_active: Boolean, created_at: String }, `${size}: snake_case users`)
    t.equal(page.meta.per_page, page.users.length)
    if (size === '7k') t.equal(page.users.length, 50, '7k: a 50-user page')
  }
  const again = await get(`${url}/users?size=7k`, agent)
  t.same(again.body, (await get(`${url}/users`, agent)).body, 'no size: the 7 KB page, the same bytes every time')
  t.equal(ports.size, 1, 'every request went over one kept-alive connection')
  t.equal((await get(`${url}/users?size=2k`, agent)).status, 404, 'an unknown size is a 404')
  t.equal((await get(`${url}/tasks`, agent)).status, 404, 'any other path is a 404')
})

t.test('the node floor passes status, end-to-end headers and body, and drops hop-by-hop headers both ways', async (t) => {
  let seen: IncomingHttpHeaders = {}
  const upstream = createServer((req, res) => {
    seen = req.headers
    req.resume()
    res.writeHead(201, { 'content-type': 'text/plain', 'x-end-to-end': 'kept', connection: 'x-hop', 'x-hop': 'dropped', 'proxy-authenticate': 'Basic' })
    res.end(`answer to ${req.url ?? ''}`)
  })
  upstream.listen(0, '127.0.0.1')
  await once(upstream, 'listening')
  t.teardown(() => { upstream.closeAllConnections(); upstream.close() })
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  await startServerProcess(t, {
    name: 'node-floor',
    entry: 'dist/bench/baselines/node-floor.js',
    env: { NODE_FLOOR_PORT: String(port), NODE_FLOOR_UPSTREAM: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}` },
    url,
    readyPath: '/healthz'
  })
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => { agent.destroy() })
  const answer = await get(`${url}/users?size=7k`, agent, { 'x-api-key': 'k', connection: 'x-client-hop', 'x-client-hop': '1', te: 'trailers' })
  t.equal(answer.status, 201, 'the upstream\'s status')
  t.equal(answer.body.toString(), 'answer to /users?size=7k', 'the body, for the path and query sent')
  t.equal(answer.headers['x-end-to-end'], 'kept', 'end-to-end response headers pass')
  t.equal(answer.headers['x-hop'], undefined, 'a response header the upstream named in Connection does not')
  t.equal(answer.headers['proxy-authenticate'], undefined, 'nor a hop-by-hop response header')
  t.equal(seen['x-api-key'], 'k', 'end-to-end request headers pass')
  t.equal(seen['x-client-hop'], undefined, 'a request header the client named in Connection does not')
  t.equal(seen.te, undefined, 'nor a hop-by-hop request header')

  upstream.closeAllConnections()
  upstream.close()
  await once(upstream, 'close')
  t.equal((await get(`${url}/users`, agent)).status, 502, 'an unreachable upstream is a 502')
})
