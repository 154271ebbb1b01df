import { AsyncLocalStorage } from 'node:async_hooks'
import { userInfo } from 'node:os'

/**
 * Who made a change, and from where: what every audit record names. The HTTP apps set
 * it per request (the admin credential, the operator's or self-service user's token),
 * the CLI for the whole command (the OS user), `npm start`'s seeding as the system.
 * Services read it when they record, so no service signature carries it.
 */
export type AuditActorType = 'user' | 'admin_token' | 'cli' | 'system' | 'anonymous'

export interface AuditActor {
  type: AuditActorType
  /** A user id, the OS user name for the CLI, `bootstrap` for the admin token, a component for the system; null for anonymous. */
  id: string | null
}

export interface AuditSource {
  ip: string | null
  userAgent: string | null
  requestId: string | null
}

export interface AuditContext {
  actor: AuditActor
  source: AuditSource
}

const NO_SOURCE: AuditSource = Object.freeze({ ip: null, userAgent: null, requestId: null })

/** Outside any request or command: identity itself (start-up work, relays). */
export const SYSTEM_CONTEXT: AuditContext = Object.freeze({ actor: Object.freeze({ type: 'system', id: 'identity' }), source: NO_SOURCE })

const storage = new AsyncLocalStorage<AuditContext>()

/** Runs `fn` with `context` as the actor of every record written inside it (awaited work included). */
export function runAs<T> (context: AuditContext, fn: () => T): T {
  return storage.run(context, fn)
}

/** The actor and source of the work running now; the system outside any. */
export function currentAuditContext (): AuditContext {
  return storage.getStore() ?? SYSTEM_CONTEXT
}

/** The CLI's actor: the OS user running it (its name only, never its environment). */
export function cliContext (): AuditContext {
  let name: string
  try {
    name = userInfo().username
  } catch {
    // No passwd entry for the uid (some containers): the uid still says who.
    name = `uid:${process.getuid?.() ?? 'unknown'}`
  }
  return { actor: { type: 'cli', id: name }, source: NO_SOURCE }
}

/** A component of the system acting on its own (`npm start`'s seeding, retention). */
export function systemContext (component: string): AuditContext {
  return { actor: { type: 'system', id: component }, source: NO_SOURCE }
}
