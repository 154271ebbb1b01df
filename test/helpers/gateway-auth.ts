import type { Test } from 'tap'
import Database from 'better-sqlite3'
import { SignJWT, exportJWK, generateKeyPair, importPKCS8, type CryptoKey, type JWK, type JWTHeaderParameters, type JWTPayload } from 'jose'
import { request } from 'undici'
import { randomBase62 } from '../../common/random.js'
import { createSigningKeyCipher, isEncrypted } from '../../identity/services/signing-key-cipher.js'
import { assertProblem } from './assert.js'
import { http, type HttpAnswer } from './http.js'
import { TEST_SIGNING_KEY_ENCRYPTION_KEY } from './signing-key-encryption.js'
import type { TestGateway } from './gateway.js'

/**
 * What the gateway's authentication suites share: counting identity's calls and the
 * key-cache tiers that answered, polling for a change to reach a gateway, and
 * forging access tokens (with identity's own signing key, read from its database,
 * so that exactly one thing about a token is wrong at a time).
 */

/** RFC 6750 §3.1: the challenge of every refused credential. */
export const INVALID_TOKEN_CHALLENGE = 'Bearer realm="portier", error="invalid_token"'
export const VERIFY_PATH = '/internal/keys/verify'
export const JWKS_PATH = '/.well-known/jwks.json'

export const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

/**
 * How many requests identity has answered on `path`. Its request line is written when
 * its response is sent, which can be a moment after the gateway has its answer.
 */
export async function identityRequests (identity: { logs: Array<Record<string, unknown>> }, path: string): Promise<number> {
  await sleep(25)
  return identity.logs.filter((line) => line.msg === 'request' && line.url === path).length
}

/** The sum of a gateway's counter `name` over the series whose labels include `labels` (any gateway with a metrics listener, process or in-process). */
export async function metricSum (gateway: Pick<TestGateway, 'metricsUrl'>, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = (await http(`${gateway.metricsUrl}/metrics`)).text
  return text.split('\n')
    .filter((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0)
}

/** `portier_gateway_key_cache_total{tier,result}`: which cache tier answered how often. */
export async function keyCacheCount (gateway: TestGateway, tier: string, result: string): Promise<number> {
  return await metricSum(gateway, 'portier_gateway_key_cache_total', { tier, result })
}

/**
 * What a gateway counted so far: answers it got from the back-office upstream (so a
 * refused request can be shown never to have reached it), and Bearer tokens its
 * token check refused.
 */
export async function gatewayWitness (gateway: TestGateway): Promise<{ upstream: number, refused: number }> {
  const [upstream, refused] = await Promise.all([
    metricSum(gateway, 'portier_gateway_upstream_duration_seconds_count', { upstream: 'backoffice' }),
    metricSum(gateway, 'portier_gateway_auth_outcomes_total', { credential: 'bearer', outcome: 'invalid' })
  ])
  return { upstream, refused }
}

/**
 * Calls `probe` every `intervalMs` until it returns true. Resolves with the
 * milliseconds since `since` (performance.now()) at that moment, or null after `timeoutMs`.
 */
export async function pollUntil (probe: () => Promise<boolean>, options: { since?: number, timeoutMs?: number, intervalMs?: number } = {}): Promise<number | null> {
  const since = options.since ?? performance.now()
  const deadline = since + (options.timeoutMs ?? 3_000)
  for (;;) {
    if (await probe()) return Math.round(performance.now() - since)
    if (performance.now() > deadline) return null
    await sleep(options.intervalMs ?? 10)
  }
}

/** A refused credential: the problem, and exactly RFC 6750's invalid_token challenge. Four assertions. */
export function assertRefused (t: Test, answer: HttpAnswer, code: 'invalid_token' | 'invalid_api_key', label: string): void {
  assertProblem(t, answer, 401, code, label)
  t.equal(answer.headers['www-authenticate'], INVALID_TOKEN_CHALLENGE, `${label}: WWW-Authenticate invalid_token`)
}

/** A GET with headers sent as given: an array value is sent as that many header lines. */
export async function getWithHeaders (url: string, headers: Record<string, string | string[]>): Promise<HttpAnswer> {
  const response = await request(url, { headers: { accept: 'application/json', ...headers } })
  const text = await response.body.text()
  let body: unknown = text
  try { body = text === '' ? null : JSON.parse(text) } catch {}
  const flat = Object.fromEntries(Object.entries(response.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : String(value)]))
  return { status: response.statusCode, headers: flat, body, text }
}

export interface TokenSigner { kid: string, alg: string, key: CryptoKey | Uint8Array }

/**
 * Identity's active signing key, read from its SQLite file (read-only) as an attacker
 * who stole it and the encryption key of the test identities would.
 */
export async function readIdentitySigningKey (databasePath: string): Promise<TokenSigner> {
  const db = new Database(databasePath, { readonly: true, fileMustExist: true })
  try {
    const row = db.prepare('SELECT kid, alg, private_pkcs8 FROM signing_keys WHERE retired_at IS NULL').get() as
      { kid: string, alg: string, private_pkcs8: string }
    const pem = isEncrypted(row.private_pkcs8)
      ? createSigningKeyCipher(TEST_SIGNING_KEY_ENCRYPTION_KEY).decrypt(row.kid, row.private_pkcs8)
      : row.private_pkcs8
    return { kid: row.kid, alg: row.alg, key: await importPKCS8(pem, row.alg) }
  } finally {
    db.close()
  }
}

/** A key identity never published, under a random kid, with its public JWK. */
export async function strangerSigner (): Promise<TokenSigner & { publicJwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' })
  return { kid: randomBase62(43), alg: 'EdDSA', key: privateKey, publicJwk: await exportJWK(publicKey) }
}

/**
 * Signs `payload` as an access token: header `{alg, kid, typ: 'at+jwt'}` of the
 * signer, overridden by `header` (a member set to undefined is left out).
 */
export async function signToken (signer: TokenSigner, payload: JWTPayload, header: { [K in keyof JWTHeaderParameters]?: JWTHeaderParameters[K] | undefined } = {}): Promise<string> {
  const protectedHeader = JSON.parse(JSON.stringify({ alg: signer.alg, kid: signer.kid, typ: 'at+jwt', ...header })) as JWTHeaderParameters
  return await new SignJWT(payload).setProtectedHeader(protectedHeader).sign(signer.key)
}
