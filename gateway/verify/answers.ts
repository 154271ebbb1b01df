import type { Principal } from '../auth/authenticate.js'
import { codeOf, problemOf, type VerifyCode } from './codes.js'
import type { Verdict } from './decide.js'

/**
 * What the gateway tells an upstream of the principal (x-portier-principal, -principal-type,
 * -permissions: proxy/forward-headers.ts), and the user it acts for. A verify answer
 * always carries every one of them, empty when there is nothing to say, so a proxy that
 * copies them to the upstream overwrites (or, nginx, drops) whatever the client sent
 * under those names itself.
 */
export const IDENTITY_HEADERS = ['x-portier-principal', 'x-portier-principal-type', 'x-portier-permissions', 'x-portier-user'] as const
/** The decision's code on every answer of a proxy shape, so a proxy (or its log) can tell a 403's reasons apart. */
export const CODE_HEADER = 'x-portier-verify-code'

/** The identity headers as name, value pairs. */
export function identityFields (principal: Principal | null): string[] {
  if (principal === null) return IDENTITY_HEADERS.flatMap((name) => [name, ''])
  return [...principal.forwardedHeaders, 'x-portier-user', principal.user ?? '']
}

/** The tightest rate limit or quota the request counted against, Unkey's `ratelimit`. */
export interface RateLimitState { name: string, limit: number, remaining: number, reset: number }

/** `"name";k=1;j=2, "other";k=3` (our own RateLimit fields: traffic/rate-limit-fields.ts) as parameters by name. */
function membersOf (field: string | undefined): Map<string, Record<string, number>> {
  const members = new Map<string, Record<string, number>>()
  for (const member of (field ?? '').split(',')) {
    const [name, ...parameters] = member.trim().split(';')
    if (name === undefined || name === '') continue
    const values: Record<string, number> = {}
    for (const parameter of parameters) {
      const [key, value] = parameter.split('=')
      if (key !== undefined && value !== undefined) values[key] = Number(value)
    }
    members.set(name.replace(/^"|"$/g, ''), values)
  }
  return members
}

/** The state of the policy with the fewest units left, read from the RateLimit-Policy and RateLimit fields; null when none counted. */
export function rateLimitStateOf (fields: Readonly<Record<string, string>>): RateLimitState | null {
  const policies = membersOf(fields['ratelimit-policy'])
  let tightest: RateLimitState | null = null
  for (const [name, state] of membersOf(fields.ratelimit)) {
    const limit = policies.get(name)?.q
    if (limit === undefined || state.r === undefined || state.t === undefined) continue
    if (tightest === null || state.r < tightest.remaining) tightest = { name, limit, remaining: state.r, reset: state.t }
  }
  return tightest
}

/** The fields a verdict carries for the client (RateLimit, Retry-After, Deprecation…), by lower-case name. */
export function answerFieldsOf (verdict: Verdict): Record<string, string> {
  if (!verdict.allowed) return { ...problemOf(verdict).headers }
  const fields: Record<string, string> = {}
  for (let i = 0; i + 1 < verdict.fields.length; i += 2) fields[verdict.fields[i] as string] = verdict.fields[i + 1] as string
  return fields
}

/** The JSON shape's answer (POST /v1/verify), always with status 200: the decision is in the body. */
export interface VerifyAnswer {
  valid: boolean
  code: VerifyCode
  /** The gateway's problem code when refused (what a proxied request would have been answered), else null. */
  reason: string | null
  key_id: string | null
  user_id: string | null
  permissions: readonly string[]
  ratelimit: RateLimitState | null
}

export function jsonAnswerOf (verdict: Verdict): VerifyAnswer {
  const { principal } = verdict
  return {
    valid: verdict.allowed,
    code: codeOf(verdict),
    reason: verdict.allowed ? null : problemOf(verdict).code,
    key_id: principal?.kind === 'key' ? principal.id : null,
    user_id: principal?.user ?? null,
    permissions: principal?.permissions ?? [],
    ratelimit: rateLimitStateOf(answerFieldsOf(verdict))
  }
}

/**
 * Whether a proxy may keep the answer: never (`no-store`) unless the operator opted in
 * with `maxAgeSeconds`, and even then only an allow that took no rate limit or quota
 * (a kept answer would let requests pass uncounted) and no longer than the credential
 * is known to be good for. A kept allow outlives a revocation by up to its max-age.
 */
export function cacheControlOf (verdict: Verdict, maxAgeSeconds: number): string {
  if (!verdict.allowed || verdict.fields.length > 0 || verdict.principal === null) return 'no-store'
  // Never kept past the credential's expiry: a key expiring within the second is asked about again.
  const maxAge = Math.min(maxAgeSeconds, verdict.trueForSeconds)
  return maxAge <= 0 ? 'no-store' : `private, max-age=${maxAge}`
}
