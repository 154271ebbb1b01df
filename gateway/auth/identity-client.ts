import { Pool, type Dispatcher } from 'undici'
import { dispatchDeadline } from '../dispatch-deadline.js'
import type { JSONWebKeySet } from 'jose'
import type { KeyVerdict, RevokedSession } from '../../common/internal-api.js'

export type { KeyVerdict, RevokedSession } from '../../common/internal-api.js'

/** Identity could not be asked (down, slow, or refusing our service credential). */
export class IdentityUnreachableError extends Error {
  override readonly name = 'IdentityUnreachableError'
}

export interface IdentityClientOptions {
  publicUrl: string
  internalUrl: string
  serviceToken: string
  timeoutMs: number
}

/** Connections to identity's internal listener (key verification, the revocation feed). */
const INTERNAL_CONNECTIONS = 32
/** Connections to its public listener (the JWKS and health checks only). */
const PUBLIC_CONNECTIONS = 2

/**
 * The gateway's calls to identity: key verification and the revocation feed on the
 * internal listener (service credential), and the JWKS on the public one. Keep-alive
 * pools, bounded time: every call, answer read whole, ends within timeoutMs of the
 * moment it is made, time spent queued for one of the pool's connections included,
 * so a slow identity never holds a request longer than that.
 */
export function createIdentityClient (options: IdentityClientOptions) {
  const pools = [
    new Pool(options.internalUrl, { connections: INTERNAL_CONNECTIONS, connect: { timeout: options.timeoutMs } }),
    new Pool(options.publicUrl, { connections: PUBLIC_CONNECTIONS, connect: { timeout: options.timeoutMs } })
  ] as const
  const [internal, publicPool] = pools.map((pool) => pool.compose(dispatchDeadline('whole'))) as [Dispatcher, Dispatcher]
  const authorization = `Bearer ${options.serviceToken}`

  async function call<T> (pool: Dispatcher, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    try {
      const response = await pool.request({
        method,
        path,
        headers: {
          accept: 'application/json',
          ...(pool === internal ? { authorization } : {}),
          ...(body !== undefined ? { 'content-type': 'application/json' } : {})
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        // The deadline of the whole exchange, from now (dispatchDeadline 'whole').
        headersTimeout: options.timeoutMs
      })
      if (response.statusCode !== 200) {
        await response.body.dump()
        throw new IdentityUnreachableError(`identity ${path} answered ${response.statusCode}`)
      }
      // Inside the try: a body cut or late (the deadline covers it) is identity unreachable too, not a 500.
      return await response.body.json() as T
    } catch (err) {
      if (err instanceof IdentityUnreachableError) throw err
      throw new IdentityUnreachableError(`identity ${path}: ${(err as Error).message}`, { cause: err })
    }
  }

  return {
    verifyKey: async (key: string): Promise<KeyVerdict> => await call<KeyVerdict>(internal, 'POST', '/internal/keys/verify', { key }),
    revokedSessionsSince: async (since: number): Promise<RevokedSession[]> =>
      (await call<{ sessions: RevokedSession[] }>(internal, 'GET', `/internal/sessions/revoked?since=${encodeURIComponent(new Date(since).toISOString())}`)).sessions,
    jwks: async (): Promise<JSONWebKeySet> => await call<JSONWebKeySet>(publicPool, 'GET', '/.well-known/jwks.json'),
    /** True when identity's public listener answers its health check. */
    healthy: async (): Promise<boolean> => {
      try {
        await call(publicPool, 'GET', '/healthz')
        return true
      } catch {
        return false
      }
    },
    close: async (): Promise<void> => { await Promise.all(pools.map(async (pool) => { await pool.close() })) }
  }
}

export type IdentityClient = ReturnType<typeof createIdentityClient>
