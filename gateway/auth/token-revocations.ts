import { ACCESS_TOKEN_TTL_SECONDS } from '../../common/access-token-profile.js'
import type { FastifyBaseLogger } from 'fastify'
import type { IdentityClient } from './identity-client.js'
import type { RevocationShare } from './revocation-share.js'

/** Access tokens live ACCESS_TOKEN_TTL_SECONDS; 60 s more covers clock skew between hosts. */
const TOKEN_LIFETIME_MS = ACCESS_TOKEN_TTL_SECONDS * 1000
const SKEW_MS = 60_000

export interface TokenRevocationsOptions {
  identity: Pick<IdentityClient, 'revokedSessionsSince'>
  /** Where gateways share revocations (Redis), so that one that starts late learns what it missed. */
  share: RevocationShare
  log: FastifyBaseLogger
  now?: () => number
}

export type Rejection = 'session_revoked' | 'permissions_changed'

/**
 * What makes a correctly signed access token unusable before it expires: its
 * session was revoked, or its user's permissions changed after it was issued (the
 * token carries the old ones; the client refreshes to get the new ones).
 *
 * Checked on every request from memory only. Kept in step by identity's events,
 * shared with the other gateways (scored by when an entry can be forgotten) so that
 * a gateway that starts late learns what it missed, and re-read from identity's
 * revocation feed periodically and after a Redis outage, when events may have been
 * lost. Entries are forgotten once no token they could reject is still alive.
 */
export function createTokenRevocations (options: TokenRevocationsOptions) {
  const { share, log } = options
  const now = options.now ?? Date.now
  /** session id → when it can be forgotten */
  const revokedSessions = new Map<string, number>()
  /** user id → tokens issued before this instant (ms) carry stale permissions */
  const staleUsers = new Map<string, number>()
  let syncedUpTo: number | null = null

  function forgetAfter (at: number): number { return at + TOKEN_LIFETIME_MS + SKEW_MS }

  function addSession (sessionId: string, forgetAt: number): void {
    if (forgetAt > (revokedSessions.get(sessionId) ?? 0)) revokedSessions.set(sessionId, forgetAt)
  }

  function addStaleUser (userId: string, at: number): void {
    if (at > (staleUsers.get(userId) ?? 0)) staleUsers.set(userId, at)
  }

  async function loadShared (): Promise<void> {
    const t = now()
    const [sessions, users] = await Promise.all([
      share.read('revoked-sessions', t),
      share.read('stale-users', t - TOKEN_LIFETIME_MS - SKEW_MS)
    ])
    for (const [id, forgetAt] of sessions) addSession(id, forgetAt)
    for (const [id, at] of users) addStaleUser(id, at)
  }

  async function loadFromIdentity (): Promise<void> {
    const since = syncedUpTo ?? now() - TOKEN_LIFETIME_MS - SKEW_MS
    const startedAt = now()
    const sessions = await options.identity.revokedSessionsSince(since)
    const shared: Array<[string, number]> = []
    for (const s of sessions) {
      const forgetAt = Math.min(forgetAfter(Date.parse(s.revoked_at)), Date.parse(s.expires_at) + SKEW_MS)
      addSession(s.id, forgetAt)
      shared.push([s.id, forgetAt])
    }
    await share.add('revoked-sessions', shared)
    // The next sync overlaps a little: a revocation committed while we asked is not skipped.
    syncedUpTo = startedAt - SKEW_MS
  }

  return {
    /** Why this token must be refused, or null. `issuedAt` in seconds (the `iat` claim). */
    check (sessionId: string, userId: string, issuedAt: number): Rejection | null {
      if (revokedSessions.has(sessionId)) return 'session_revoked'
      const staleBefore = staleUsers.get(userId)
      // iat has one-second resolution, so a token issued in the second of the change may
      // predate it: it is refused (fail closed). Otherwise a demoted user refreshing in a
      // loop keeps the old permissions for a token lifetime; the cost is that a refresh in
      // that same second must be repeated a moment later.
      if (staleBefore !== undefined && issuedAt <= Math.floor(staleBefore / 1000)) return 'permissions_changed'
      return null
    },

    async revokeSessions (sessionIds: string[], at: number): Promise<void> {
      const forgetAt = forgetAfter(at)
      for (const id of sessionIds) addSession(id, forgetAt)
      await share.add('revoked-sessions', sessionIds.map((id) => [id, forgetAt]))
    },

    async permissionsChanged (userIds: string[], at: number): Promise<void> {
      for (const id of userIds) addStaleUser(id, at)
      await share.add('stale-users', userIds.map((id) => [id, at]))
    },

    /** Catches up from the share and from identity; each source that fails is logged and retried next time. */
    async sync (): Promise<void> {
      await Promise.all([
        loadShared().catch((err: unknown) => { log.warn({ err }, 'could not read shared revocations from Redis') }),
        loadFromIdentity().catch((err: unknown) => { log.warn({ err }, 'could not read the revocation feed from identity') })
      ])
    },

    /** Drops entries that can no longer reject any live token, and trims the share likewise. */
    async prune (): Promise<void> {
      const t = now()
      for (const [id, forgetAt] of revokedSessions) if (forgetAt <= t) revokedSessions.delete(id)
      for (const [id, at] of staleUsers) if (forgetAfter(at) <= t) staleUsers.delete(id)
      await Promise.all([share.trim('revoked-sessions', t), share.trim('stale-users', t - TOKEN_LIFETIME_MS - SKEW_MS)])
    },

    get size (): { sessions: number, users: number } { return { sessions: revokedSessions.size, users: staleUsers.size } }
  }
}

export type TokenRevocations = ReturnType<typeof createTokenRevocations>
