import type { Test } from 'tap'
import { assertStatus } from './assert.js'
import { http, type HttpAnswer } from './http.js'
import { openSession, type AdminSetup, type SessionTokens } from './session-setup.js'

/** A user logged in with a role of their own: what an operator (or a user refused as one) presents. */
export interface TestOperator {
  userId: string
  email: string
  password: string
  /** The role made for them, holding exactly the permissions asked for. */
  role: string
  tokens: SessionTokens
  /** A request to the admin listener with this user's access token. */
  call: <T = any>(method: string, path: string, body?: unknown) => Promise<HttpAnswer<T>>
}

let made = 0

/**
 * Creates a role granting `permissions`, a user holding it, and logs them in (each
 * step asserted), through the admin API with the bootstrap token.
 */
export async function makeOperator (t: Test, s: AdminSetup, permissions: string[], name = `operator-${++made}`): Promise<TestOperator> {
  assertStatus(t, await s.admin('PUT', `/admin/roles/${name}`, { permissions }), 200, `role ${name} created`)
  const email = `${name}@example.com`
  const password = `${name} password`
  const created = await s.admin('POST', '/admin/users', { email, password, roles: [name] })
  assertStatus(t, created, 201, `user ${email} created`)
  const tokens = await openSession(t, s, { email, password }, {}, `${email} logs in`)
  return {
    userId: created.body.user.id as string,
    email,
    password,
    role: name,
    tokens,
    call: async (method, path, body) =>
      await http(`${s.adminUrl}${path}`, { method, bearer: tokens.access_token, ...(body !== undefined ? { body } : {}) })
  }
}
