import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { WebSocketServer } from 'ws'
import { DEFAULT_PAGE_SIZE, PAGE_SIZES, pageOfSize, type PageSize } from './pages.js'

/**
 * The throughput scenarios' upstream: plain node:http, no framework, its own process,
 * answering `GET /users?size=1k|7k|30k` (7k without `size`) with a body built once at
 * start, and a WebSocket echo at /ws. The mock builds every page per request and saturates long before a proxy in
 * front of it does, so every proxy measured against it looks alike; this one costs
 * little more than the write, so a proxy in front of it is the bottleneck it should be.
 * The bench checks that it is (direct ÷ bare proxy, the headroom check).
 *
 * Run by the bench: STATIC_UPSTREAM_PORT.
 */
const port = Number(process.env.STATIC_UPSTREAM_PORT)
if (!Number.isInteger(port)) throw new Error('STATIC_UPSTREAM_PORT is required')

/** Answers built once: status line fields and headers included, nothing computed per request. */
interface Answer { status: number, headers: Record<string, string>, body: Buffer }

function answerOf (status: number, body: Buffer): Answer {
  return { status, headers: { 'content-type': 'application/json', 'content-length': String(body.length) }, body }
}

const pages = new Map<string, Answer>(PAGE_SIZES.map((size: PageSize) => [size, answerOf(200, pageOfSize(size))]))
const defaultPage = pages.get(DEFAULT_PAGE_SIZE) as Answer
const health = answerOf(200, Buffer.from('{"status":"ok"}'))
const notFound = answerOf(404, Buffer.from('{"status":404,"title":"Not Found"}'))

function route (url: string): Answer {
  const query = url.indexOf('?')
  const path = query === -1 ? url : url.slice(0, query)
  if (path === '/users') {
    if (query === -1) return defaultPage
    const size = new URLSearchParams(url.slice(query + 1)).get('size')
    return size === null ? defaultPage : pages.get(size) ?? notFound
  }
  if (path === '/healthz') return health
  return notFound
}

const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  const answer = req.method === 'GET' || req.method === 'HEAD' ? route(req.url ?? '/') : notFound
  // Whatever the client sent is drained, so the connection stays usable.
  req.resume()
  res.writeHead(answer.status, answer.headers)
  res.end(req.method === 'HEAD' ? undefined : answer.body)
})
// Proxies keep their pooled connections open across the pauses between runs: a
// connection closed under them would show up as an error in the next run.
server.keepAliveTimeout = 120_000
server.headersTimeout = 121_000
// The WebSocket scenario's upstream: every message echoed as it came.
const echo = new WebSocketServer({ server, path: '/ws' })
echo.on('connection', (socket) => { socket.on('message', (data, binary) => { socket.send(data, { binary }) }) })
server.listen(port, '127.0.0.1')
process.on('SIGTERM', () => {
  server.closeAllConnections()
  server.close(() => process.exit(0))
})
