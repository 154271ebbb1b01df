import type { FastifyInstance } from 'fastify'
import { buildUpstreamMock } from '../../upstream-mock/app.js'

interface Teardown { teardown: (fn: () => unknown) => void }

/**
 * The back-office mock for one test, on loopback port 0, closed at the end of the
 * test. Warnings and errors go to stderr (tap shows them on failure), not into the
 * TAP stream.
 */
export async function startUpstreamMock (t: Teardown, options: { users?: number } = {}): Promise<{ url: string, app: FastifyInstance }> {
  const app = await buildUpstreamMock({ ...options, logLevel: 'warn', logStream: process.stderr })
  t.teardown(() => app.close())
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  return { url, app }
}
