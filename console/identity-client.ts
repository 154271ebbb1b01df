import { jsonCaller, type Answer, type ClientFacts } from './http-json.js'

export interface TokenSet { access_token: string, refresh_token: string, expires_in: number }

export type { Answer, ClientFacts, Problem } from './http-json.js'

export interface Profile {
  user: { id: string, email: string, roles: string[] }
  permissions: string[]
  self_service: { key_max_lifetime_days: number, max_keys: number, active_keys: number, keys_left: number }
}

export interface OwnKey {
  id: string
  name: string
  key_prefix: string
  /** The last 4 characters of the key's text; null for a key made before identity kept them. */
  key_last4: string | null
  permissions: string[]
  status: 'active' | 'disabled' | 'revoked' | 'expired'
  expires_at: string | null
  created_at: string
  last_used_at: string | null
  last_used_route: string | null
  last_used_ip: string | null
  rotation: { grace_until: string } | null
}

export interface CreatedKey { api_key: OwnKey, key: string, warnings: string[] }

/** One of the user's live sessions; `current` is the one of the access token that asked. */
export interface OwnSession {
  id: string
  ip_address: string
  user_agent: string
  created_at: string
  last_used_at: string
  expires_at: string
  current: boolean
}

export interface NewKey { name: string, permissions: string[], expires_at: string }

/** Requests of one bucket (or of the whole range) by outcome; `total` excludes upstream_error, which is among the allowed. */
export interface UsageCounts { allowed: number, forbidden: number, rate_limited: number, quota_exhausted: number, upstream_error: number, total: number }

export interface KeyUsage { step: 'hour' | 'day', from: string, to: string, buckets: Array<UsageCounts & { start: string }>, totals: UsageCounts }

export interface UsageRange { from: string, to: string, step: 'hour' | 'day' }

export interface IdentityClient {
  signIn: (email: string, password: string, client: ClientFacts) => Promise<Answer<TokenSet>>
  refresh: (accessToken: string, refreshToken: string, client: ClientFacts) => Promise<Answer<TokenSet>>
  signOut: (accessToken: string, client: ClientFacts) => Promise<Answer<null>>
  profile: (accessToken: string, client: ClientFacts) => Promise<Answer<Profile>>
  keys: (accessToken: string, client: ClientFacts) => Promise<Answer<{ api_keys: OwnKey[] }>>
  createKey: (accessToken: string, key: NewKey, client: ClientFacts) => Promise<Answer<CreatedKey>>
  key: (accessToken: string, id: string, client: ClientFacts) => Promise<Answer<{ api_key: OwnKey }>>
  keyUsage: (accessToken: string, id: string, range: UsageRange, client: ClientFacts) => Promise<Answer<KeyUsage>>
  rotateKey: (accessToken: string, id: string, graceSeconds: number, client: ClientFacts) => Promise<Answer<CreatedKey>>
  revokeKey: (accessToken: string, id: string, client: ClientFacts) => Promise<Answer<{ api_key: OwnKey }>>
  sessions: (accessToken: string, client: ClientFacts) => Promise<Answer<{ sessions: OwnSession[] }>>
  endSession: (accessToken: string, sessionId: string, client: ClientFacts) => Promise<Answer<null>>
  endOtherSessions: (accessToken: string, client: ClientFacts) => Promise<Answer<{ revoked: number }>>
}

/** Identity's public listener, for every signed-in user: sign-in, refresh, sign-out, and /me (self-service). */
export function createIdentityClient (publicUrl: string, timeoutMs = 10_000): IdentityClient {
  const call = jsonCaller(publicUrl, timeoutMs)

  return {
    signIn: async (email, password, client) => await call('POST', '/sessions', client, { body: { session: { email, password } } }),
    // Identity asks for the session's access token beside the refresh token (expired or not): both must be of one session.
    refresh: async (accessToken, refreshToken, client) => await call('POST', '/tokens', client, { bearer: accessToken, body: { refresh_token: refreshToken } }),
    signOut: async (accessToken, client) => await call('DELETE', '/sessions/current', client, { bearer: accessToken }),
    profile: async (accessToken, client) => await call('GET', '/me', client, { bearer: accessToken }),
    keys: async (accessToken, client) => await call('GET', '/me/keys', client, { bearer: accessToken }),
    createKey: async (accessToken, key, client) => await call('POST', '/me/keys', client, { bearer: accessToken, body: key }),
    key: async (accessToken, id, client) => await call('GET', `/me/keys/${encodeURIComponent(id)}`, client, { bearer: accessToken }),
    keyUsage: async (accessToken, id, range, client) =>
      await call('GET', `/me/keys/${encodeURIComponent(id)}/usage?${new URLSearchParams({ ...range }).toString()}`, client, { bearer: accessToken }),
    rotateKey: async (accessToken, id, graceSeconds, client) =>
      await call('POST', `/me/keys/${encodeURIComponent(id)}/rotate`, client, { bearer: accessToken, body: { grace_seconds: graceSeconds } }),
    revokeKey: async (accessToken, id, client) => await call('POST', `/me/keys/${encodeURIComponent(id)}/revoke`, client, { bearer: accessToken }),
    sessions: async (accessToken, client) => await call('GET', '/me/sessions', client, { bearer: accessToken }),
    endSession: async (accessToken, sessionId, client) => await call('DELETE', `/me/sessions/${encodeURIComponent(sessionId)}`, client, { bearer: accessToken }),
    endOtherSessions: async (accessToken, client) => await call('POST', '/me/sessions/revoke-others', client, { bearer: accessToken })
  }
}
