import type { FastifyBaseLogger } from 'fastify'
import type { AuthEvent } from '../../common/events.js'
import type { Authenticate, Principal } from '../auth/authenticate.js'
import { authorise } from '../auth/authorise.js'
import type { ResolvedRoute } from '../routing/index.js'

/** WebSocket close code for a connection whose credential no longer lets it through (RFC 6455 §7.4.1: policy violation). */
export const CLOSE_CREDENTIAL_REVOKED = 1008

/** One proxied WebSocket, as revocation sees it. */
export interface OpenSocket {
  route: ResolvedRoute
  principal: Principal
  /** The credential it was opened with, as the request presented it: checked again as a request would be. */
  credential: { 'x-api-key': string } | { authorization: string }
  /** Closes both sides, with this code and reason to the client. */
  close: (code: number, reason: string) => void
}

/**
 * The WebSockets open through this gateway, by whom they act for, so that a change to
 * their credential reaches them as fast as it reaches the next request: on every
 * identity event that touches a key (revoked, disabled, updated, rotated) or a user
 * (a session revoked, disabled, roles changed), each socket of that key, user or
 * user's keys is checked again, once the caches have dropped what the event made
 * stale: authenticated and authorised as a request to its route would be now. One that
 * no longer passes is closed with 1008. A periodic check catches what an event missed
 * (a token that expired, an event lost while Redis was away).
 */
export function createOpenSockets (deps: { authenticate: Authenticate, log: FastifyBaseLogger }) {
  const byPrincipal = new Map<string, Set<OpenSocket>>()

  /** The names a socket is found under: its key or user, and the user its key belongs to. */
  function namesOf (principal: Principal): string[] {
    const own = `${principal.kind}:${principal.id}`
    return principal.kind === 'key' && principal.user !== null ? [own, `user:${principal.user}`] : [own]
  }

  function stillAllowed (socket: OpenSocket): boolean | Promise<boolean> {
    const refused = (): boolean => false
    try {
      const checked = deps.authenticate(socket.credential)
      const allowed = (principal: Principal): boolean => { authorise(socket.route, principal); return true }
      return checked instanceof Promise ? checked.then(allowed, refused) : allowed(checked)
    } catch {
      return false
    }
  }

  async function recheck (sockets: Iterable<OpenSocket>): Promise<void> {
    await Promise.all([...sockets].map(async (socket) => {
      let allowed: boolean
      try {
        allowed = await stillAllowed(socket)
      } catch {
        allowed = false
      }
      if (!allowed) {
        deps.log.info({ route: socket.route.pattern, principal: { type: socket.principal.kind, id: socket.principal.id } }, 'websocket closed: its credential no longer lets it through')
        socket.close(CLOSE_CREDENTIAL_REVOKED, 'credential revoked')
      }
    }))
  }

  function socketsOf (names: readonly string[]): Set<OpenSocket> {
    const found = new Set<OpenSocket>()
    for (const name of names) for (const socket of byPrincipal.get(name) ?? []) found.add(socket)
    return found
  }

  return {
    /** Tracks `socket` until the returned function is called (when it closes). */
    add (socket: OpenSocket): () => void {
      const names = namesOf(socket.principal)
      for (const name of names) {
        let set = byPrincipal.get(name)
        if (set === undefined) byPrincipal.set(name, set = new Set())
        set.add(socket)
      }
      return () => {
        for (const name of names) {
          const set = byPrincipal.get(name)
          set?.delete(socket)
          if (set?.size === 0) byPrincipal.delete(name)
        }
      }
    },

    /** Checks again the sockets an identity event may concern (call it once the caches have applied the event). */
    async afterEvent (event: AuthEvent): Promise<void> {
      if (byPrincipal.size === 0) return
      switch (event.type) {
        case 'key.revoked':
        case 'key.disabled':
        case 'key.updated':
        case 'key.rotated':
          await recheck(socketsOf([`key:${event.keyId}`]))
          return
        case 'session.revoked':
        case 'user.disabled':
        case 'user.roles_changed':
          await recheck(socketsOf([`user:${event.userId}`]))
          return
        case 'role.changed':
          await recheck(socketsOf((event.userIds ?? []).map((id) => `user:${id}`)))
      }
    },

    /** Checks every open socket again. */
    async recheckAll (): Promise<void> {
      await recheck(socketsOf([...byPrincipal.keys()]))
    },

    get size (): number { return socketsOf([...byPrincipal.keys()]).size }
  }
}

export type OpenSockets = ReturnType<typeof createOpenSockets>
