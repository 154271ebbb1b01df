import type { Test } from 'tap'
import { lookupIdOf } from '../../common/api-key-format.js'
import { KEYS_USAGE_PATH } from '../../common/internal-api.js'
import { randomBase62 } from '../../common/random.js'
import { fakeClock, startIdentity, type FakeClock, type TestIdentity } from './identity.js'
import { adminClient, http, type HttpAnswer } from './http.js'
import { assertJson, assertStatus } from './assert.js'
import { ADA, claimsOf, sidOf, type SessionTokens, type TokenSet } from './tokens.js'

/**
 * The setup most identity suites share: identity on a fake clock with an admin
 * client, optionally a role or two and a user, and the public calls a user makes
 * (login, refresh, logout) over real sockets.
 */

// Light helpers, re-exported for the suites that already take them from here.
export { ADA, claimsOf, sidOf, type SessionTokens, type TokenSet }

export interface Credentials { email: string, password: unknown }
export type AdminClient = ReturnType<typeof adminClient>

export interface AdminSetup extends TestIdentity {
  clock: FakeClock
  admin: AdminClient
}

type PublicUrl = Pick<TestIdentity, 'publicUrl'>

/** Identity on a fake clock (at START unless moved), with an admin client. `env` as for startIdentity. */
export async function startWithAdmin (t: Test, env: Record<string, string> = {}): Promise<AdminSetup> {
  const clock = fakeClock()
  const identity = await startIdentity(t, env, { clock })
  return { ...identity, clock, admin: adminClient(identity.adminUrl, identity.adminToken) }
}

/** POST /sessions: a login, not checked. */
export async function postLogin (identity: PublicUrl, credentials: Credentials, headers: Record<string, string> = {}): Promise<HttpAnswer> {
  return await http(`${identity.publicUrl}/sessions`, { body: { session: credentials }, headers })
}

/** A login that must succeed (asserts 201): the token set and its session id. */
export async function openSession (t: Test, identity: PublicUrl, credentials: Credentials, headers: Record<string, string> = {},
  label = 'login'): Promise<SessionTokens> {
  const answer = await postLogin(identity, credentials, headers)
  assertStatus(t, answer, 201, label)
  return { ...answer.body, sid: sidOf(answer.body.access_token) }
}

/** POST /tokens (or `path`, e.g. /jetons) with a Bearer (none if undefined) and a refresh token. */
export async function postRefresh (identity: PublicUrl, bearer: string | undefined, refreshToken: string, path = '/tokens',
  headers: Record<string, string> = {}): Promise<HttpAnswer> {
  return await http(`${identity.publicUrl}${path}`, { ...(bearer !== undefined ? { bearer } : {}), headers, body: { refresh_token: refreshToken } })
}

/** Refreshes a token set with its own access token as the Bearer. */
export async function refreshTokens (identity: PublicUrl, tokens: TokenSet, path = '/tokens'): Promise<HttpAnswer> {
  return await postRefresh(identity, tokens.access_token, tokens.refresh_token, path)
}

/** DELETE /sessions/current with a Bearer, or with exactly the given headers. */
export async function postLogout (identity: PublicUrl, credential: string | Record<string, string>): Promise<HttpAnswer> {
  return typeof credential === 'string'
    ? await http(`${identity.publicUrl}/sessions/current`, { method: 'DELETE', bearer: credential })
    : await http(`${identity.publicUrl}/sessions/current`, { method: 'DELETE', headers: credential })
}

export interface UserSetupOptions {
  env?: Record<string, string>
  /** Roles created first, each asserted 200. Default: `reader` with `users:list`. */
  roles?: Record<string, string[]>
  /** The user created next, asserted 201. Default: ADA holding every role above. */
  user?: { email: string, password: string, roles?: string[] }
  /** Assert 200 on the admin look-ups `session` and `sessions` make. Default: false. */
  checkLookups?: boolean
}

export interface Refresh {
  /** Refreshes a token set with its own access token. */
  (tokens: TokenSet, path?: string): Promise<HttpAnswer>
  /** Any Bearer (none if undefined) with any refresh token. */
  (bearer: string | undefined, refreshToken: string, path?: string, headers?: Record<string, string>): Promise<HttpAnswer>
}

export interface UserSetup extends AdminSetup {
  user: { email: string, password: string }
  userId: string
  /** Logs the user in (asserts 201). */
  login: () => Promise<SessionTokens>
  /** POST /sessions with any credentials and headers, not checked. */
  loginAs: (credentials: Credentials, headers?: Record<string, string>) => Promise<HttpAnswer>
  refresh: Refresh
  /** DELETE /sessions/current with a Bearer, or with exactly the given headers. */
  logout: (credential: string | Record<string, string>) => Promise<HttpAnswer>
  /** The admin view of an access token's session. */
  session: (accessToken: string) => Promise<Record<string, unknown>>
  /** GET /admin/sessions: every session, or one user's. */
  sessions: (userId?: string) => Promise<Array<Record<string, unknown>>>
}

/** Identity on a fake clock with an admin client, roles and one user, and that user's public calls. */
export async function startWithUser (t: Test, options: UserSetupOptions = {}): Promise<UserSetup> {
  const s = await startWithAdmin(t, options.env)
  const roles = options.roles ?? { reader: ['users:list'] }
  for (const [name, permissions] of Object.entries(roles)) {
    assertStatus(t, await s.admin('PUT', `/admin/roles/${name}`, { permissions }), 200, `role ${name} created`)
  }
  const { roles: userRoles = Object.keys(roles), ...user }: NonNullable<UserSetupOptions['user']> = options.user ?? ADA
  const created = await s.admin('POST', '/admin/users', { ...user, roles: userRoles })
  assertStatus(t, created, 201, 'user created')
  const lookup = async (path: string): Promise<HttpAnswer> => {
    const answer = await s.admin('GET', path)
    if (options.checkLookups === true) assertStatus(t, answer, 200, `GET ${path.replace(/\?.*/, '')}`)
    return answer
  }
  const refresh = (async (first: TokenSet | string | undefined, ...rest: [string?, string?, Record<string, string>?]) =>
    typeof first === 'object'
      ? await refreshTokens(s, first, rest[0])
      : await postRefresh(s, first, rest[0] as string, rest[1], rest[2])) as Refresh
  return {
    ...s,
    user,
    userId: created.body.user.id as string,
    login: async () => await openSession(t, s, user),
    loginAs: async (credentials, headers) => await postLogin(s, credentials, headers),
    refresh,
    logout: async (credential) => await postLogout(s, credential),
    session: async (accessToken) => (await lookup(`/admin/sessions/${sidOf(accessToken)}`)).body.session,
    sessions: async (userId) => (await lookup(userId === undefined ? '/admin/sessions' : `/admin/sessions?user_id=${userId}`)).body.sessions
  }
}

/** POST /internal/keys/verify with the service credential, not checked. */
export async function postVerifyKey (identity: Pick<TestIdentity, 'adminUrl' | 'serviceToken'>, key: unknown): Promise<HttpAnswer> {
  return await http(`${identity.adminUrl}/internal/keys/verify`, { bearer: identity.serviceToken, body: { key } })
}

/** POST /internal/keys/usage with the service credential, not checked. */
export async function postKeyUsage (identity: Pick<TestIdentity, 'adminUrl' | 'serviceToken'>, report: unknown): Promise<HttpAnswer> {
  return await http(`${identity.adminUrl}${KEYS_USAGE_PATH}`, { bearer: identity.serviceToken, body: report })
}

/** Uses of one key's secret, as a test describes them: the full key, how many (1), when, and the last route and address. */
export interface TestUse { key: string, count?: number, at: number, route?: string | null, ip?: string | null }

/** A usage report as a gateway sends it, under a fresh batch id unless given. */
export function usageReport (uses: TestUse[], batchId = randomBase62(24)): { batch_id: string, uses: Array<Record<string, unknown>> } {
  return {
    batch_id: batchId,
    uses: uses.map((use) => ({
      lookup_id: lookupIdOf(use.key),
      count: use.count ?? 1,
      last_used_at: new Date(use.at).toISOString(),
      last_route: use.route === undefined ? '/users' : use.route,
      last_ip: use.ip === undefined ? '127.0.0.1' : use.ip
    }))
  }
}

export interface KeyHelperOptions {
  /** Also assert that every verification answer has Cache-Control: no-store. */
  verifyNoStore?: boolean
  /** Check a create answer's status only, or also its JSON type (the default). */
  createCheck?: 'status' | 'json'
}

export interface KeyHelpers {
  /** Verifies a key through /internal/keys/verify; asserts a 200 JSON answer. */
  verify: (key: string) => Promise<Record<string, any>>
  /** POST /admin/keys; asserts 201. */
  create: (body: Record<string, unknown>) => Promise<{ id: string, key: string, answer: HttpAnswer }>
  /** Reports uses as a gateway does, through /internal/keys/usage; asserts a 200 JSON answer (the receipt). */
  reportUses: (uses: TestUse[]) => Promise<Record<string, any>>
}

/** API-key calls of an identity started with startWithAdmin. */
export function keyHelpers (t: Test, s: AdminSetup, options: KeyHelperOptions = {}): KeyHelpers {
  return {
    async verify (key) {
      const answer = await postVerifyKey(s, key)
      assertJson(t, answer, 200, 'verify')
      if (options.verifyNoStore === true) t.equal(answer.headers['cache-control'], 'no-store', 'verification answers are not cached by intermediaries')
      return answer.body
    },
    async create (body) {
      const answer = await s.admin('POST', '/admin/keys', body)
      const label = `create ${String(body.name)}`
      if (options.createCheck === 'status') assertStatus(t, answer, 201, label)
      else assertJson(t, answer, 201, label)
      return { id: answer.body.api_key.id, key: answer.body.key, answer }
    },
    async reportUses (uses) {
      const answer = await postKeyUsage(s, usageReport(uses))
      assertJson(t, answer, 200, 'usage report')
      return answer.body
    }
  }
}
