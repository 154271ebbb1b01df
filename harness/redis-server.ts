import { spawn, type ChildProcess } from 'node:child_process'
import { Redis } from 'ioredis'
import { freePort } from './ports.js'

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

/** Who stops the server: a tap test, or anything with the same `teardown` (the benchmark's stack). */
export interface Teardown { teardown: (fn: () => unknown) => void }

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

/** A private `redis-server` on a free loopback port, whatever REDIS_URL says (the benchmark wants its own). */
export async function startPrivateRedis (t: Teardown): Promise<TestRedis> {
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
