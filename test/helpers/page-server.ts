import { createServer, type OutgoingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Teardown } from './temp.js'

export interface StaticPage {
  /** Defaults to text/html. */
  type?: string
  body: string
  headers?: OutgoingHttpHeaders
}

/**
 * A few fixed pages on a real loopback socket, closed when `t` ends: what a browser
 * test loads when it needs a page of its own (the harness's self-test) or a site on
 * another origin (a cross-site form). Returns the origin, e.g. http://127.0.0.1:41234.
 */
export async function servePages (t: Teardown, pages: Record<string, StaticPage>): Promise<string> {
  const server = createServer((request, response) => {
    const page = pages[new URL(request.url ?? '/', 'http://page.test').pathname]
    if (page === undefined) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found')
      return
    }
    response.writeHead(200, { 'content-type': page.type ?? 'text/html; charset=utf-8', ...page.headers }).end(page.body)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}
