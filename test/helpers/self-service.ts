import type { Test } from 'tap'
import { assertStatus } from './assert.js'
import { http, type HttpAnswer, type HttpRequest } from './http.js'
import { iso, type TestIdentity } from './identity.js'
import { openSession, startWithUser, type AdminSetup, type SessionTokens, type UserSetup, type UserSetupOptions } from './session-setup.js'

/**
 * What the self-service suites share: users who log in and call /me with their access
 * token, over real sockets, and the audit records identity wrote.
 */

export const DAY_MS = 86_400_000

/** A call to identity's public listener (or a gateway's base URL) as a user: their Bearer unless the request says otherwise. */
export type MeCall = (method: string, path: string, body?: unknown, request?: Omit<HttpRequest, 'method' | 'body'>) => Promise<HttpAnswer>

export function meCall (baseUrl: string, accessToken: string): MeCall {
  return async (method, path, body, request = {}) =>
    await http(`${baseUrl}${path}`, { method, bearer: accessToken, ...request, ...(body !== undefined ? { body } : {}) })
}

export interface Member {
  userId: string
  email: string
  tokens: SessionTokens
  /** Calls identity's public listener with this user's access token. */
  me: MeCall
  /** Logs in again (a new session), for `me` to carry a fresh access token once the clock moved past the old one's expiry. */
  relogin: () => Promise<void>
}

function member (t: Test, s: Pick<TestIdentity, 'publicUrl'>, userId: string, email: string, password: string, tokens: SessionTokens): Member {
  const m: Member = {
    userId,
    email,
    tokens,
    me: meCall(s.publicUrl, tokens.access_token),
    async relogin () {
      m.tokens = await openSession(t, s, { email, password }, {}, `${email} logs in again`)
      m.me = meCall(s.publicUrl, m.tokens.access_token)
    }
  }
  return m
}

export const PASSWORD = 'correct horse battery staple'

/** A user made through the admin API (asserts 201), logged in once. */
export async function addMember (t: Test, s: AdminSetup & Pick<TestIdentity, 'publicUrl'>, email: string, roles: string[]): Promise<Member> {
  const created = await s.admin('POST', '/admin/users', { email, password: PASSWORD, roles })
  assertStatus(t, created, 201, `user ${email} created`)
  const tokens = await openSession(t, s, { email, password: PASSWORD }, {}, `${email} logs in`)
  return member(t, s, created.body.user.id as string, email, PASSWORD, tokens)
}

/** startWithUser, and ADA logged in as a member. */
export async function startWithMember (t: Test, options: UserSetupOptions = {}): Promise<UserSetup & { ada: Member }> {
  const s = await startWithUser(t, options)
  return { ...s, ada: member(t, s, s.userId, s.user.email, s.user.password, await s.login()) }
}

/** An expiry `days` (and `extraMs`) from the identity's clock now, as the API writes it. */
export const daysFrom = (clock: { now: () => number }, days: number, extraMs = 0): string => iso(clock.now() + days * DAY_MS + extraMs)

/** POST /me/keys that must succeed (asserts 201): the key's id and full text. */
export async function createOwnKey (t: Test, me: MeCall, body: Record<string, unknown>): Promise<{ id: string, key: string, answer: HttpAnswer }> {
  const answer = await me('POST', '/me/keys', body)
  assertStatus(t, answer, 201, `own key ${String(body.name)} created`)
  return { id: answer.body?.api_key?.id as string, key: answer.body?.key as string, answer }
}

export interface AuditRow {
  seq: number
  action: string
  outcome: string
  error_code: string | null
  actor_type: string
  actor_id: string | null
  target_type: string | null
  target_id: string | null
  target_name: string | null
  changes: string | null
}

/** The audit records of `action`, oldest first, read from identity's database. */
export function auditRows (identity: Pick<TestIdentity, 'identity'>, action: string): AuditRow[] {
  return identity.identity.db.prepare('SELECT * FROM audit_log WHERE action = ? ORDER BY seq').all(action) as AuditRow[]
}
