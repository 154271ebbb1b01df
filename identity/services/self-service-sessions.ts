import { IdentityProblems } from '../errors.js'
import type { SessionRecord } from '../store/sessions-store.js'
import type { Clock } from './clock.js'
import type { Sessions } from './sessions.js'

/** Why a session a user ends themselves was revoked (an operator's say `admin`). */
export const ENDED_BY_USER = 'user'

export type SelfServiceSessions = ReturnType<typeof createSelfServiceSessions>

/**
 * A user's own sessions: where they are logged in, and ending the others. The session of
 * the presented token is not ended here (logging out is the way: DELETE /sessions/current).
 * Another user's session is unknown here, answered exactly as an id nobody has. Ending
 * goes through the sessions service, which tells gateways to drop the session's tokens.
 */
export function createSelfServiceSessions (options: { sessions: Pick<Sessions, 'get' | 'list' | 'revoke'>, clock: Clock }) {
  const { sessions, clock } = options
  const live = (session: SessionRecord, now: number): boolean => session.revokedAt === null && session.expiresAt > now

  function active (userId: string): SessionRecord[] {
    const now = clock.now()
    return sessions.list({ userId }).filter((session) => live(session, now))
  }

  return {
    /** The user's live sessions, newest first. */
    active,

    /** Ends one of the user's other sessions; one already ended stays as it is. */
    async end (userId: string, currentSessionId: string, sessionId: string): Promise<void> {
      const session = sessions.get(sessionId)
      if (session.userId !== userId) throw IdentityProblems.sessionNotFound([sessionId])
      if (session.id === currentSessionId) throw IdentityProblems.sessionIsCurrent()
      if (live(session, clock.now())) await sessions.revoke(session.id, ENDED_BY_USER)
    },

    /** Ends every live session of the user but the current one; how many it ended. */
    async endOthers (userId: string, currentSessionId: string): Promise<number> {
      const others = active(userId).filter((session) => session.id !== currentSessionId)
      for (const session of others) await sessions.revoke(session.id, ENDED_BY_USER)
      return others.length
    }
  }
}
