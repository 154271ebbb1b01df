import { createHash } from 'node:crypto'
import { newId, randomBase62 } from '../../common/random.js'
import type { EventBus } from '../../common/event-bus.js'
import type { Db } from '../store/db.js'
import type { SessionsStore, SessionRecord } from '../store/sessions-store.js'
import type { UsersStore } from '../store/users-store.js'
import { IdentityDetails, IdentityProblems } from '../errors.js'
import type { IdentityMetrics } from '../observability/metrics.js'
import type { AccessTokens } from './access-tokens.js'
import type { Clock } from './clock.js'
import type { UserGrants } from './user-grants.js'

const REFRESH_TOKEN_PREFIX = 'prt_'
/** 43 base62 characters: 256 bits. */
const REFRESH_TOKEN_SECRET_LENGTH = 43
/** Longest history `revokedSince` returns in one answer; callers page with `since`. */
const REVOKED_PAGE_SIZE = 10_000

export interface TokenSet {
  token_type: 'Bearer'
  expires_in: number
  access_token: string
  refresh_token: string
}

export interface SessionsOptions {
  db: Db
  store: SessionsStore
  users: UsersStore
  /** What the user's roles grant now: each token set carries it. */
  grantsOf: (userId: string) => UserGrants
  accessTokens: AccessTokens
  events: EventBus
  clock: Clock
  metrics: Pick<IdentityMetrics, 'refreshes'>
  accessTokenTtlSeconds: number
  refreshIdleSeconds: number
  sessionMaxSeconds: number
  refreshReuseGraceSeconds: number
}

export function hashRefreshToken (token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

/** Outcome of the synchronous refresh transaction; problems are thrown after it commits. */
type RotateOutcome =
  | { ok: true, sessionId: string, userId: string, grants: UserGrants, refreshToken: string }
  | { ok: false, problem: Error, revokedSession?: { id: string, userId: string } }

export type Sessions = ReturnType<typeof createSessions>

/**
 * Sessions and their token sets: creation at login, refresh-token rotation with
 * reuse detection (RFC 9700 §4.14.2), revocation, and the revocation feed gateways
 * read when they start.
 */
export function createSessions (options: SessionsOptions) {
  const { db, store, users, grantsOf, accessTokens, events, clock, metrics } = options

  function newRefreshToken (sessionId: string, now: number): string {
    const token = `${REFRESH_TOKEN_PREFIX}${randomBase62(REFRESH_TOKEN_SECRET_LENGTH)}`
    store.insertRefreshToken({ tokenHash: hashRefreshToken(token), sessionId, createdAt: now, expiresAt: now + options.refreshIdleSeconds * 1000 })
    return token
  }

  async function tokenSet (userId: string, sessionId: string, grants: UserGrants, refreshToken: string): Promise<TokenSet> {
    return {
      token_type: 'Bearer',
      expires_in: options.accessTokenTtlSeconds,
      access_token: await accessTokens.issue({ userId, sessionId, ...grants }),
      refresh_token: refreshToken
    }
  }

  async function announceRevoked (sessionIds: string[], userId: string, reason: string): Promise<void> {
    if (sessionIds.length === 0) return
    await events.publish({ type: 'session.revoked', sessionIds, userId, reason, at: new Date(clock.now()).toISOString() })
  }

  /** Why a session cannot be used, or null if it can. */
  function unusable (session: SessionRecord | null, now: number): Error | null {
    if (session === null) return IdentityProblems.refreshTokenInvalid()
    if (session.revokedAt !== null) return IdentityProblems.sessionRevoked()
    if (session.expiresAt <= now) return IdentityProblems.sessionExpired()
    const user = users.byId(session.userId)
    if (user === null || user.disabledAt !== null) return IdentityProblems.userDisabled()
    return null
  }

  const rotate = db.transaction((presentedHash: string, bearerSessionId: string, now: number): RotateOutcome => {
    const token = store.refreshTokenByHash(presentedHash)
    // A refresh token of another session than the Bearer's is refused without side effects.
    if (token === null || token.sessionId !== bearerSessionId) return { ok: false, problem: IdentityProblems.refreshTokenInvalid() }
    const session = store.byId(token.sessionId)
    const problem = unusable(session, now)
    if (problem !== null || session === null) return { ok: false, problem: problem ?? IdentityProblems.refreshTokenInvalid() }
    if (token.usedAt !== null) {
      // A grace of 0 means every reuse revokes, even one in the same millisecond.
      if (options.refreshReuseGraceSeconds > 0 && now - token.usedAt <= options.refreshReuseGraceSeconds * 1000) {
        return { ok: false, problem: IdentityProblems.refreshTokenSuperseded() }
      }
      store.revoke(session.id, 'refresh_token_reuse', now)
      return { ok: false, problem: IdentityProblems.refreshTokenReused(), revokedSession: { id: session.id, userId: session.userId } }
    }
    if (token.expiresAt <= now) return { ok: false, problem: IdentityProblems.refreshTokenExpired() }
    // Synchronous and inside one transaction: of concurrent refreshes, exactly one gets here first.
    if (!store.markRefreshTokenUsed(presentedHash, now)) return { ok: false, problem: IdentityProblems.refreshTokenSuperseded() }
    store.touch(session.id, now)
    return {
      ok: true,
      sessionId: session.id,
      userId: session.userId,
      grants: grantsOf(session.userId),
      refreshToken: newRefreshToken(session.id, now)
    }
  })

  async function exchangeRefreshToken (bearer: string, refreshToken: string): Promise<TokenSet> {
    const claims = await accessTokens.verify(bearer, options.refreshIdleSeconds)
    const outcome = rotate(hashRefreshToken(refreshToken), claims.sid, clock.now())
    if (!outcome.ok) {
      if (outcome.revokedSession !== undefined) {
        await announceRevoked([outcome.revokedSession.id], outcome.revokedSession.userId, 'refresh_token_reuse')
      }
      throw outcome.problem
    }
    return await tokenSet(outcome.userId, outcome.sessionId, outcome.grants, outcome.refreshToken)
  }

  const createSession = db.transaction((userId: string, ipAddress: string, userAgent: string, now: number) => {
    const id = newId('ses')
    store.insert({ id, userId, ipAddress, userAgent, createdAt: now, expiresAt: now + options.sessionMaxSeconds * 1000 })
    return { id, refreshToken: newRefreshToken(id, now) }
  })

  const revokeAllOfUser = db.transaction((userId: string, reason: string, now: number, alongside?: () => void): string[] => {
    alongside?.()
    const ids = store.liveIdsOfUser(userId, now)
    for (const id of ids) store.revoke(id, reason, now)
    return ids
  })

  return {
    /** Opens a session for an authenticated user and returns its first token set. */
    async open (userId: string, client: { ipAddress: string, userAgent: string }): Promise<TokenSet> {
      const { id, refreshToken } = createSession(userId, client.ipAddress, client.userAgent, clock.now())
      return await tokenSet(userId, id, grantsOf(userId), refreshToken)
    },

    /**
     * Exchanges a refresh token for a new token set. The Bearer must be an access
     * token this identity signed for the same session; its expiry is tolerated up
     * to the refresh idle lifetime because clients refresh around expiry.
     */
    async refresh (bearer: string, refreshToken: string): Promise<TokenSet> {
      try {
        const refreshed = await exchangeRefreshToken(bearer, refreshToken)
        metrics.refreshes.inc({ outcome: 'success' })
        return refreshed
      } catch (err) {
        metrics.refreshes.inc({ outcome: 'failure' })
        throw err
      }
    },

    /** The live session behind a valid (unexpired) access token; throws a 401 problem otherwise. */
    async authenticate (bearer: string): Promise<SessionRecord> {
      const claims = await accessTokens.verify(bearer)
      const session = store.byId(claims.sid)
      if (session === null) throw IdentityProblems.invalidToken([IdentityDetails.unknownSession])
      const problem = unusable(session, clock.now())
      if (problem !== null) throw problem
      return session
    },

    get (id: string): SessionRecord {
      const session = store.byId(id)
      if (session === null) throw IdentityProblems.sessionNotFound([id])
      return session
    },

    /** Newest first; without a limit, all of them. */
    list (filter: { userId?: string, limit?: number }): SessionRecord[] {
      const limit = filter.limit ?? -1
      return filter.userId !== undefined ? store.listByUser(filter.userId, limit) : store.listAll(limit)
    },

    async revoke (id: string, reason: string): Promise<SessionRecord> {
      const session = this.get(id)
      if (store.revoke(id, reason, clock.now())) await announceRevoked([id], session.userId, reason)
      return this.get(id)
    },

    /**
     * Ends every live session of a user. `alongside` is a change to the user that
     * must commit in the same transaction (a new password, disabling).
     */
    async revokeAllOfUser (userId: string, reason: string, alongside?: () => void): Promise<string[]> {
      const ids = revokeAllOfUser(userId, reason, clock.now(), alongside)
      await announceRevoked(ids, userId, reason)
      return ids
    },

    /**
     * Sessions revoked at or after `since` (ms), oldest first, so a gateway that
     * starts late can reject their still-unexpired access tokens.
     */
    revokedSince: (since: number) => store.revokedSince(since, REVOKED_PAGE_SIZE)
  }
}
