import { Pool } from 'undici'
import type { JSONWebKeySet } from 'jose'

/** What identity says of a presented API key (POST /internal/keys/verify). */
export type KeyVerdict =
  | {
    valid: true
    key: { id: string, name: string, permissions: string[], expires_at: string | null }
    deprecation: { deprecated_at: string, sunset_at: string } | null
  }
  | { valid: false, reason: string }

export interface RevokedSession { id: string, revoked_at: string, expires_at: string }

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

/**
 * The gateway's calls to identity: key verification and the revocation feed on the
 * internal listener (service credential), and the JWKS on the public one. Keep-alive
 * pools, bounded time: a slow identity must not hold requests longer than timeoutMs.
 */
export function createIdentityClient (options: IdentityClientOptions) {
  const internal = new Pool(options.internalUrl, { connections: 32, connect: { timeout: options.timeoutMs } })
  const publicPool = new Pool(options.publicUrl, { connections: 2, connect: { timeout: options.timeoutMs } })
  const authorization = `Bearer ${options.serviceToken}`

  async function call<T> (pool: Pool, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    let response
    try {
      response = await pool.request({
        method,
        path,
        headers: {
          accept: 'application/json',
          ...(pool === internal ? { authorization } : {}),
          ...(body !== undefined ? { 'content-type': 'application/json' } : {})
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs
      })
    } catch (err) {
      throw new IdentityUnreachableError(`identity ${path}: ${(err as Error).message}`, { cause: err })
    }
    if (response.statusCode !== 200) {
      await response.body.dump()
      throw new IdentityUnreachableError(`identity ${path} answered ${response.statusCode}`)
    }
    return await response.body.json() as T
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
    close: async (): Promise<void> => { await Promise.all([internal.close(), publicPool.close()]) }
  }
}

export type IdentityClient = ReturnType<typeof createIdentityClient>
