import { Pool, type Dispatcher } from 'undici'
import type { ValidateFunction } from 'ajv'
import type { FastifyBaseLogger } from 'fastify'
import type { JSONWebKeySet } from 'jose'
import { createAjv } from '../../common/ajv.js'
import {
  KEYS_USAGE_PATH, KEYS_VERIFY_PATH, KeyUsageReceipt, KeyVerdict, QUOTA_USAGE_PATH, QuotaTotals, RevokedSessions, SESSIONS_REVOKED_PATH,
  type KeyUsageReport, type QuotaUsageReport, type RevokedSession
} from '../../common/internal-api.js'
import { dispatchDeadline } from '../dispatch-deadline.js'
import type { TraceParent } from '../../common/tracing/tracing.js'

export type { KeyUsageReceipt, KeyUsageReport, KeyVerdict, RevokedSession } from '../../common/internal-api.js'

/** Identity could not be asked (down, slow, refusing our service credential, or answering outside the contract). */
export class IdentityUnreachableError extends Error {
  override readonly name = 'IdentityUnreachableError'
  /** The status identity answered with, when it answered something other than 200; null when it did not answer. */
  readonly status: number | null

  constructor (message: string, options: { cause?: unknown, status?: number } = {}) {
    super(message, options.cause !== undefined ? { cause: options.cause } : undefined)
    this.status = options.status ?? null
  }
}

/**
 * Identity refused a report itself (400, 413): sent again it would be refused again,
 * and hold back every report after it.
 */
export const refusedForGood = (err: unknown): boolean => err instanceof IdentityUnreachableError && (err.status === 400 || err.status === 413)

export interface IdentityClientOptions {
  publicUrl: string
  internalUrl: string
  serviceToken: string
  timeoutMs: number
  log: FastifyBaseLogger
}

/** Connections to identity's internal listener (key verification, the revocation feed, usage reports). */
const INTERNAL_CONNECTIONS = 32
/** Connections to its public listener (the JWKS and health checks only). */
const PUBLIC_CONNECTIONS = 2

/** Enough to tell what identity got wrong; an answer wrong throughout does not make a huge log line. */
const MAX_REPORTED_VIOLATIONS = 5
/** Identity's answers are checked against the internal API's schemas, compiled once per process. */
const ajv = createAjv(false)
const answerSchemas = {
  [KEYS_VERIFY_PATH]: ajv.compile<KeyVerdict>(KeyVerdict),
  [SESSIONS_REVOKED_PATH]: ajv.compile<RevokedSessions>(RevokedSessions),
  [KEYS_USAGE_PATH]: ajv.compile<KeyUsageReceipt>(KeyUsageReceipt),
  [QUOTA_USAGE_PATH]: ajv.compile<QuotaTotals>(QuotaTotals)
}

/**
 * The gateway's calls to identity: key verification, the revocation feed and key usage
 * reports on the internal listener (service credential), and the JWKS on the public
 * one. Keep-alive pools, bounded time: every call, answer read whole, ends within
 * timeoutMs of the moment it is made, time spent queued for one of the pool's
 * connections included, so a slow identity never holds a request longer than that.
 *
 * An internal answer that is not what common/internal-api.ts says (not JSON, a member
 * missing or of the wrong type, an unknown reason) is logged and treated as identity
 * being unavailable: nothing is trusted from it, so no key is accepted or cached on it.
 */
export function createIdentityClient (options: IdentityClientOptions) {
  const pools = [
    new Pool(options.internalUrl, { connections: INTERNAL_CONNECTIONS, connect: { timeout: options.timeoutMs } }),
    new Pool(options.publicUrl, { connections: PUBLIC_CONNECTIONS, connect: { timeout: options.timeoutMs } })
  ] as const
  const [internal, publicPool] = pools.map((pool) => pool.compose(dispatchDeadline('whole'))) as [Dispatcher, Dispatcher]
  const authorization = `Bearer ${options.serviceToken}`

  /** The answer's text; anything but a 200 read whole in time is identity unreachable. */
  async function call (pool: Dispatcher, method: 'GET' | 'POST', path: string, body?: unknown, parent?: TraceParent): Promise<string> {
    try {
      const response = await pool.request({
        method,
        path,
        headers: {
          accept: 'application/json',
          ...(pool === internal ? { authorization } : {}),
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...parent?.headers()
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        // The deadline of the whole exchange, from now (dispatchDeadline 'whole').
        headersTimeout: options.timeoutMs
      })
      if (response.statusCode !== 200) {
        await response.body.dump()
        throw new IdentityUnreachableError(`identity ${path} answered ${response.statusCode}`, { status: response.statusCode })
      }
      // Inside the try: a body cut or late (the deadline covers it) is identity unreachable too, not a 500.
      return await response.body.text()
    } catch (err) {
      if (err instanceof IdentityUnreachableError) throw err
      throw new IdentityUnreachableError(`identity ${path}: ${(err as Error).message}`, { cause: err })
    }
  }

  /** An internal API answer, checked against its schema. */
  async function callInternal<T> (method: 'GET' | 'POST', path: keyof typeof answerSchemas, query: string, body?: unknown, parent?: TraceParent): Promise<T> {
    const text = await call(internal, method, `${path}${query}`, body, parent)
    const validate = answerSchemas[path] as ValidateFunction<T>
    let answer: unknown
    try {
      answer = JSON.parse(text)
    } catch {
      throw breach(path, 'the answer is not JSON')
    }
    if (!validate(answer)) throw breach(path, ajv.errorsText(validate.errors?.slice(0, MAX_REPORTED_VIOLATIONS), { dataVar: 'answer' }))
    return answer
  }

  /** Logged here, where what was wrong is known; the caller sees identity unavailable. */
  function breach (path: string, problem: string): IdentityUnreachableError {
    options.log.error({ path, problem }, 'identity answered outside the internal API contract; treated as unavailable')
    return new IdentityUnreachableError(`identity ${path} answered outside the contract: ${problem}`)
  }

  /** A public answer: identity's JWKS is checked key by key where it is used (jwks-cache.ts). */
  async function json<T> (path: string): Promise<T> {
    const text = await call(publicPool, 'GET', path)
    try {
      return JSON.parse(text) as T
    } catch (err) {
      throw new IdentityUnreachableError(`identity ${path}: ${(err as Error).message}`, { cause: err })
    }
  }

  return {
    /** `parent`: the traced request's span, which identity's own span of the check joins. */
    verifyKey: async (key: string, parent?: TraceParent): Promise<KeyVerdict> => await callInternal<KeyVerdict>('POST', KEYS_VERIFY_PATH, '', { key }, parent),
    /** Reports key uses; throws IdentityUnreachableError (with the status, when identity answered one) unless identity took them. */
    reportKeyUsage: async (report: KeyUsageReport): Promise<KeyUsageReceipt> => await callInternal<KeyUsageReceipt>('POST', KEYS_USAGE_PATH, '', report),
    /** Adds quota units counted here and reads the totals of quota counters (identity's count is the authoritative one). */
    quotaUsage: async (report: QuotaUsageReport): Promise<QuotaTotals> => await callInternal<QuotaTotals>('POST', QUOTA_USAGE_PATH, '', report),
    revokedSessionsSince: async (since: number): Promise<RevokedSession[]> =>
      (await callInternal<RevokedSessions>('GET', SESSIONS_REVOKED_PATH, `?since=${encodeURIComponent(new Date(since).toISOString())}`)).sessions,
    jwks: async (): Promise<JSONWebKeySet> => await json<JSONWebKeySet>('/.well-known/jwks.json'),
    /** True when identity's public listener answers its health check. */
    healthy: async (): Promise<boolean> => {
      try {
        await json('/healthz')
        return true
      } catch {
        return false
      }
    },
    close: async (): Promise<void> => { await Promise.all(pools.map(async (pool) => { await pool.close() })) }
  }
}

export type IdentityClient = ReturnType<typeof createIdentityClient>
