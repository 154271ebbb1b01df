import { jsonCaller, type Answer, type CallOptions, type ClientFacts } from '../http-json.js'

/**
 * Identity's admin listener, for the operator pages: every call carries the signed-in
 * operator's own access token, so identity checks their operator permission and records
 * them (not a shared token) as the actor in the audit trail.
 */
export interface AdminClient {
  call: <T>(method: string, path: string, accessToken: string, client: ClientFacts, options?: Omit<CallOptions, 'bearer'>) => Promise<Answer<T>>
  /** The listener's base URL, for the one answer streamed through as it comes (the audit export). */
  readonly url: string
}

export function createAdminClient (adminUrl: string, timeoutMs = 10_000): AdminClient {
  const call = jsonCaller(adminUrl, timeoutMs)
  return {
    url: adminUrl,
    call: async (method, path, accessToken, client, options = {}) => await call(method, path, client, { ...options, bearer: accessToken })
  }
}
