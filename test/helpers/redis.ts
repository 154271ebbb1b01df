import { startPrivateRedis, type Teardown, type TestRedis } from '../../harness/redis-server.js'

// The benchmark starts its redis-server with the same code: it lives in harness/, which both may import.
export { freePort } from '../../harness/ports.js'
export { startPrivateRedis, type TestRedis }

/**
 * A Redis for one test file: REDIS_URL when set, otherwise a private `redis-server`
 * on a free loopback port, nothing persisted, stopped at the end of the test.
 */
export async function startRedis (t: Teardown): Promise<TestRedis> {
  if (process.env.REDIS_URL !== undefined && process.env.REDIS_URL !== '') {
    const url = process.env.REDIS_URL
    return { url, private: false, stop: async () => {}, restart: async () => {} }
  }
  return await startPrivateRedis(t)
}
