import { createServer, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http'
import { Pool } from 'undici'

/**
 * The Node floor: node:http in front of an undici Pool to the upstream, passing the
 * status, the headers less the hop-by-hop ones, and the body stream, and nothing
 * else (no routing, no logging, no hooks). What any Node proxy on this machine must
 * spend at least; the report gives every variant's throughput as a ratio to it.
 * Run by the bench as its own process: NODE_FLOOR_PORT, NODE_FLOOR_UPSTREAM.
 */
const port = Number(process.env.NODE_FLOOR_PORT)
const upstream = process.env.NODE_FLOOR_UPSTREAM
if (!Number.isInteger(port) || upstream === undefined) throw new Error('NODE_FLOOR_PORT and NODE_FLOOR_UPSTREAM are required')

/** RFC 9110 §7.6.1: meaningful for one connection only, never forwarded (host: undici sets the upstream's). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host'])

function endToEnd (headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>): OutgoingHttpHeaders {
  const named = typeof headers.connection === 'string' ? headers.connection.toLowerCase().split(',').map((name) => name.trim()) : []
  const kept: OutgoingHttpHeaders = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name) && !named.includes(name)) kept[name] = value
  }
  return kept
}

const pool = new Pool(upstream, { pipelining: 1, keepAliveTimeout: 120_000 })

const server = createServer((req, res) => {
  const bodyless = req.method === 'GET' || req.method === 'HEAD'
  pool.stream(
    { path: req.url ?? '/', method: req.method ?? 'GET', headers: endToEnd(req.headers) as Record<string, string>, body: bodyless ? null : req },
    ({ statusCode, headers }) => {
      res.writeHead(statusCode, endToEnd(headers))
      return res
    }
  ).catch(() => {
    if (!res.headersSent) {
      res.writeHead(502, { 'content-length': '0' })
      res.end()
    } else {
      res.destroy()
    }
  })
  if (bodyless) req.resume()
})
server.keepAliveTimeout = 120_000
server.headersTimeout = 121_000
server.listen(port, '127.0.0.1')
process.on('SIGTERM', () => {
  server.closeAllConnections()
  server.close(() => { void pool.close().then(() => process.exit(0)) })
})
