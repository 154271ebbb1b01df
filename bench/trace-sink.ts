import { createServer as createHttpServer } from 'node:http'
import { createServer as createTcpServer, type AddressInfo, type Server, type Socket } from 'node:net'

/** A trace collector for the tracing scenario: one that takes every export and discards it, or one that never answers. */
export interface TraceSink {
  /** Base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it. */
  url: string
  close: () => Promise<void>
}

async function listening (server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** OTLP/HTTP that reads each export and answers 200 at once: what a healthy collector costs the gateway. */
export async function startDiscardingSink (): Promise<TraceSink> {
  const server = createHttpServer((request, response) => {
    request.resume().on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'))
  })
  const url = await listening(server)
  return { url, close: async () => { server.closeAllConnections(); await new Promise((resolve) => server.close(resolve)) } }
}

/** Accepts connections and never answers nor reads: a black-holed collector. */
export async function startBlackHoleSink (): Promise<TraceSink> {
  const sockets = new Set<Socket>()
  const server = createTcpServer((socket) => {
    sockets.add(socket)
    socket.pause()
    socket.on('close', () => sockets.delete(socket))
  })
  const url = await listening(server)
  return {
    url,
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    }
  }
}
