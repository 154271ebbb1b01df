import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { WebSocketServer } from 'ws'

/** Where the echo WebSocket answers. */
export const WEBSOCKET_ECHO_PATH = '/ws/echo'

/** Largest message the echo takes. */
const MAX_MESSAGE_BYTES = 16 * 1_048_576

/** Headers the mock tells the client about on connect: what a gateway forwarded. */
const ECHOED_HEADER = /^(x-portier-|x-request-id$|x-forwarded-|authorization$|x-api-key$|cookie$)/

/**
 * A WebSocket echo at /ws/echo, for the gateway's WebSocket routes: its first message
 * says what the handshake carried (the path, the query and the headers a gateway
 * forwards, as `{"handshake":{…}}`), then every message is sent back as it came, text
 * or binary. Other upgrades are refused with 404 and the connection closed.
 */
export function installWebSocketEcho (app: FastifyInstance): void {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES })
  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const url = new URL(request.url ?? '/', 'http://mock')
    if (url.pathname !== WEBSOCKET_ECHO_PATH) {
      socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n')
      return
    }
    wss.handleUpgrade(request, socket, head, (ws) => {
      const headers = Object.fromEntries(Object.entries(request.headers).filter(([name]) => ECHOED_HEADER.test(name)))
      ws.send(JSON.stringify({ handshake: { path: url.pathname, query: url.search, headers } }))
      ws.on('message', (data, binary) => { ws.send(data, { binary }) })
    })
  }
  app.server.on('upgrade', onUpgrade)
  app.addHook('preClose', (done) => {
    app.server.removeListener('upgrade', onUpgrade)
    for (const client of wss.clients) client.terminate()
    wss.close(() => { done() })
  })
}
