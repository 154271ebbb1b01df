import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import { Redis } from 'ioredis'

export interface TestRedis {
  url: string
  /** Stops the private server (no-op with REDIS_URL); tests of outages call it mid-test. */
  stop: () => Promise<void>
  /** Starts it again on the same port after `stop`. */
  restart: () => Promise<void>
  private: boolean
  /** What points a Portier process at it, when not just REDIS_URL=url (a cluster's seed nodes). */
  env?: Record<string, string>
}

export async function freePort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

async function waitUntilPingable (url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
    client.on('error', () => {}) // refused while the server starts: expected, retried below
    try {
      await client.connect()
      await client.ping()
      return
    } catch (err) {
      if (Date.now() > deadline) throw err
      await new Promise((resolve) => setTimeout(resolve, 50))
    } finally {
      client.disconnect()
    }
  }
}

/**
 * A Redis for one test file: REDIS_URL when set, otherwise a private `redis-server`
 * on a free loopback port, nothing persisted, stopped at the end of the test.
 */
export async function startRedis (t: { teardown: (fn: () => unknown) => void }): Promise<TestRedis> {
  if (process.env.REDIS_URL !== undefined && process.env.REDIS_URL !== '') {
    const url = process.env.REDIS_URL
    return { url, private: false, stop: async () => {}, restart: async () => {} }
  }
  return await startPrivateRedis(t)
}

/** A private `redis-server` on a free loopback port, whatever REDIS_URL says (the benchmark wants its own). */
export async function startPrivateRedis (t: { teardown: (fn: () => unknown) => void }): Promise<TestRedis> {
  const port = await freePort()
  const url = `redis://127.0.0.1:${port}`
  let child: ChildProcess | null = null
  const start = async (): Promise<void> => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning'],
      { stdio: 'ignore' })
    await waitUntilPingable(url, 10_000)
  }
  const stop = async (): Promise<void> => {
    const running = child
    child = null
    if (running === null || running.exitCode !== null) return
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve())
      running.kill('SIGKILL')
    })
  }
  await start()
  t.teardown(stop)
  return { url, private: true, stop, restart: start }
}
