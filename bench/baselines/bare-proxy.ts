import Fastify from 'fastify'
import proxy from '@fastify/http-proxy'

/**
 * The framework floor: Fastify with @fastify/http-proxy and nothing else (no logger,
 * no authentication, no hooks). Whatever the gateway costs beyond this is Portier's.
 * Run by the bench as its own process: BARE_PROXY_PORT, BARE_PROXY_UPSTREAM, and
 * BARE_PROXY_WEBSOCKET=1 for the WebSocket reference (the plugin's `websocket: true`,
 * which the HTTP baseline leaves off).
 */
const port = Number(process.env.BARE_PROXY_PORT)
const upstream = process.env.BARE_PROXY_UPSTREAM
if (!Number.isInteger(port) || upstream === undefined) throw new Error('BARE_PROXY_PORT and BARE_PROXY_UPSTREAM are required')

const app = Fastify()
await app.register(proxy, { upstream, websocket: process.env.BARE_PROXY_WEBSOCKET === '1' })
await app.listen({ host: '127.0.0.1', port })
process.on('SIGTERM', () => { void app.close().then(() => process.exit(0)) })
