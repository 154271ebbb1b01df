import { CompactSign, compactVerify, decodeProtectedHeader } from 'jose'
import type { Audit, ChainVerification } from './audit.js'
import type { Clock } from './clock.js'
import type { SigningKeys } from './signing-keys.js'

/**
 * The signed head of the audit trail: its last seq and hash, signed as a compact JWS
 * with identity's current signing key (the JWKS at /.well-known/jwks.json verifies
 * it). A copy kept elsewhere later shows a log rewritten or cut short: the record at
 * that seq no longer has that hash, or is gone.
 */

/** The JWS `typ`: a head is never mistaken for an access token, nor one for a head. */
export const AUDIT_HEAD_TYPE = 'portier-audit-head+jws'

export interface AuditHeadClaims {
  iss: string
  seq: number
  hash: string
  /** The head record's time, null for an empty trail. */
  at: string | null
  signed_at: string
}

export interface SignedAuditHead extends AuditHeadClaims { head: string }

/**
 * `matches`: signature good, the record at seq still has that hash and the chain verifies.
 * Anything else says what is wrong; only `matches` is valid.
 */
export const HEAD_CHECK_REASONS = ['matches', 'signature_invalid', 'unknown_signing_key', 'hash_differs', 'record_missing', 'pruned', 'chain_broken'] as const
export type HeadCheckReason = typeof HEAD_CHECK_REASONS[number]

export interface HeadCheck {
  valid: boolean
  reason: HeadCheckReason
  seq: number | null
  hash: string | null
  chain: ChainVerification | null
}

export interface AuditHeadsOptions {
  audit: Audit
  signingKeys: SigningKeys
  clock: Clock
  issuer: string
}

export type AuditHeads = ReturnType<typeof createAuditHeads>

function isClaims (value: unknown): value is AuditHeadClaims {
  const claims = value as Partial<AuditHeadClaims> | null
  return typeof claims === 'object' && claims !== null && Number.isSafeInteger(claims.seq) && (claims.seq ?? -1) >= 0 &&
    typeof claims.hash === 'string' && /^[0-9a-f]{64}$/.test(claims.hash)
}

export function createAuditHeads (options: AuditHeadsOptions) {
  const { audit, signingKeys, clock } = options
  const refused = (reason: HeadCheckReason, seq: number | null = null, hash: string | null = null): HeadCheck =>
    ({ valid: false, reason, seq, hash, chain: null })

  return {
    async sign (): Promise<SignedAuditHead> {
      const { kid, alg, key } = await signingKeys.active()
      const claims: AuditHeadClaims = { iss: options.issuer, ...audit.head(), signed_at: new Date(clock.now()).toISOString() }
      const head = await new CompactSign(new TextEncoder().encode(JSON.stringify(claims)))
        .setProtectedHeader({ alg, kid, typ: AUDIT_HEAD_TYPE })
        .sign(key)
      return { head, ...claims }
    },

    /** Checks a head signed earlier (by any signing key this identity ever had) against the log as it is now. */
    async check (jws: string): Promise<HeadCheck> {
      let kid: string | undefined
      try {
        const header = decodeProtectedHeader(jws)
        if (header.typ !== AUDIT_HEAD_TYPE) return refused('signature_invalid')
        kid = header.kid
      } catch {
        return refused('signature_invalid')
      }
      const publicKey = kid === undefined ? null : await signingKeys.publicKey(kid)
      if (publicKey === null) return refused('unknown_signing_key')
      let claims: unknown
      try {
        const { payload } = await compactVerify(jws, publicKey.key, { algorithms: [publicKey.alg] })
        claims = JSON.parse(new TextDecoder().decode(payload))
      } catch {
        return refused('signature_invalid')
      }
      if (!isClaims(claims) || claims.iss !== options.issuer) return refused('signature_invalid')
      const now = audit.hashAt(claims.seq)
      if (now.state !== 'present') return refused(now.state === 'pruned' ? 'pruned' : 'record_missing', claims.seq, claims.hash)
      if (now.hash !== claims.hash) return refused('hash_differs', claims.seq, claims.hash)
      const chain = await audit.verify()
      return { valid: chain.valid, reason: chain.valid ? 'matches' : 'chain_broken', seq: claims.seq, hash: claims.hash, chain }
    }
  }
}
