import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import { generateApiKey, parseApiKey } from '../../common/api-key-format.js'
import { bytesToBase62, randomBase62 } from '../../common/random.js'
import { START, iso } from '../helpers/identity.js'
import { http, type HttpAnswer } from '../helpers/http.js'
import { assertProblem, assertStatus } from '../helpers/assert.js'
import { keyHelpers, postVerifyKey, startWithAdmin, type AdminSetup, type KeyHelpers } from '../helpers/session-setup.js'

/**
 * POST /internal/keys/verify: the gateway's cache-miss path. A valid key answers its
 * id, name, permissions and expiry; an invalid one a reason. Malformed text is
 * refused from the format alone, without touching the database.
 */

const HOUR_MS = 3_600_000

/**
 * A well-formed key text: the checksum recomputed the way common/api-key-format.ts
 * does (SHA-256 of everything before it, first 8 bytes, 6 base62 characters).
 */
function withChecksum (body: string): string {
  return `${body}${bytesToBase62(createHash('sha256').update(body).digest().subarray(0, 8), 6)}`
}

interface Setup extends AdminSetup, KeyHelpers {
  /** POST /internal/keys/verify with the service credential, not checked. */
  verifyAnswer: (key: unknown) => Promise<HttpAnswer>
}

async function setup (t: Test): Promise<Setup> {
  const s = await startWithAdmin(t)
  return {
    ...s,
    ...keyHelpers(t, s, { verifyNoStore: true, createCheck: 'status' }),
    verifyAnswer: async (key) => await postVerifyKey(s, key)
  }
}

/** Malformed presentations of `key` (a real, valid key). */
function malformedVariants (key: string): Array<[label: string, text: string]> {
  const lastChar = key.at(-1) === 'A' ? 'B' : 'A'
  const secretStart = 'ptk_'.length + 12 + 1
  const typo = key[secretStart] === 'x' ? 'y' : 'x'
  const body = key.slice(0, -6)
  return [
    ['bad checksum', `${key.slice(0, -1)}${lastChar}`],
    ['a typo in the secret', `${key.slice(0, secretStart)}${typo}${key.slice(secretStart + 1)}`],
    ['wrong prefix (checksum recomputed)', withChecksum(`ptx_${body.slice(4)}`)],
    ['upper-case prefix (checksum recomputed)', withChecksum(`PTK_${body.slice(4)}`)],
    ['no prefix', key.slice(4)],
    ['a character outside base62 (checksum recomputed)', withChecksum(`${body.slice(0, -1)}-`)],
    ['one character short', key.slice(0, -1)],
    ['one character long', `${key}A`],
    ['surrounding space', ` ${key}`],
    ['garbage', 'hello'],
    ['empty', ''],
    ['only the prefix', 'ptk_'],
    ['a JWT-looking string', 'eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0.c2ln'],
    ['1024 characters', 'k'.repeat(1024)]
  ]
}

t.test('happy: a valid key answers its id, name, permissions and expiry', async (t) => {
  const s = await setup(t)
  const expiring = await s.create({ name: 'billing', permissions: ['users:read', 'tasks:*'], expires_at: iso(START + HOUR_MS) })
  t.same(await s.verify(expiring.key), {
    valid: true,
    key: { id: expiring.id, name: 'billing', permissions: ['tasks:*', 'users:read'], expires_at: iso(START + HOUR_MS), owner_user_id: null, policies: [] },
    deprecation: null
  })
  const forever = await s.create({ name: 'forever', permissions: ['*'] })
  t.same(await s.verify(forever.key), {
    valid: true,
    key: { id: forever.id, name: 'forever', permissions: ['*'], expires_at: null, owner_user_id: null, policies: [] },
    deprecation: null
  })
})

t.test('malformed: refused from the format alone', async (t) => {
  const s = await setup(t)
  const { id, key } = await s.create({ name: 'k', permissions: [], expires_at: iso(START + HOUR_MS) })
  for (const [label, text] of malformedVariants(key)) {
    t.equal(parseApiKey(text), null, `${label}: really malformed`)
    t.same(await s.verify(text), { valid: false, reason: 'malformed' }, label)
  }
  t.match(await s.verify(key), { valid: true }, 'the real key still works')
  t.match((await s.admin('GET', `/admin/keys/${id}`)).body.api_key.secrets, [{ use_count: 0 }], 'no verification counted as a use: the gateway reports uses')
})

t.test('malformed: answered without touching the database', async (t) => {
  const s = await setup(t)
  const { key } = await s.create({ name: 'k', permissions: [], expires_at: iso(START + HOUR_MS) })
  s.identity.db.close()
  for (const [label, text] of malformedVariants(key)) {
    t.same(await s.verify(text), { valid: false, reason: 'malformed' }, `${label}, database closed`)
  }
  // The database really is closed: a well-formed key, which needs a lookup, now fails.
  for (const text of [key, generateApiKey().key]) {
    const answer = await s.verifyAnswer(text)
    assertProblem(t, answer, 500, 'internal_error', 'a well-formed key with the database closed')
    t.notOk(answer.text.includes('database') || answer.text.includes('SQL'), 'no internals in the answer')
  }
})

t.test('unknown: a well-formed key that was never issued', async (t) => {
  const s = await setup(t)
  await s.create({ name: 'k', permissions: [], expires_at: iso(START + HOUR_MS) })
  const stranger = generateApiKey().key
  t.not(parseApiKey(stranger), null, 'well-formed')
  t.same(await s.verify(stranger), { valid: false, reason: 'unknown' })
})

t.test('a real lookup id with another secret answers exactly like an unknown key', async (t) => {
  const s = await setup(t)
  const { id, key } = await s.create({ name: 'k', permissions: ['users:list'], expires_at: iso(START + HOUR_MS) })
  const { lookupId, secret } = parseApiKey(key) as { lookupId: string, secret: string }
  const forged = withChecksum(`ptk_${lookupId}_${randomBase62(43)}`)
  t.not(parseApiKey(forged), null, 'the forgery is well-formed, so only the hash can tell')
  t.not(parseApiKey(forged)?.secret, secret)
  t.same(await s.verify(forged), { valid: false, reason: 'unknown' }, 'the lookup id exists, the answer does not say so')
  const shown = (await s.admin('GET', `/admin/keys/${id}`)).body.api_key
  t.equal(shown.last_used_at, null, 'a wrong secret is not a use')
  t.match(shown.secrets, [{ use_count: 0 }])
  t.match(await s.verify(key), { valid: true })
})

t.test('security: without its secret, a key\'s state is never told (expired, revoked, disabled, retired by rotation)', async (t) => {
  const s = await setup(t)
  const make = async (name: string, expiresInMs = 2 * HOUR_MS) => await s.create({ name, permissions: ['users:list'], expires_at: iso(START + expiresInMs) })
  const revoked = await make('revoked')
  const disabled = await make('disabled')
  const expired = await make('expired', HOUR_MS)
  const rotated = await make('rotated')
  assertStatus(t, await s.admin('POST', `/admin/keys/${revoked.id}/revoke`), 200, 'revoke')
  assertStatus(t, await s.admin('POST', `/admin/keys/${disabled.id}/disable`), 200, 'disable')
  assertStatus(t, await s.admin('POST', `/admin/keys/${rotated.id}/rotate`, { grace_seconds: 0 }), 200, 'rotate without grace')
  s.clock.advance(HOUR_MS)

  const withAnotherSecret = (key: string): string => withChecksum(`ptk_${(parseApiKey(key) as { lookupId: string }).lookupId}_${randomBase62(43)}`)
  const unknownAnswer = await s.verifyAnswer(generateApiKey().key)
  t.same(unknownAnswer.body, { valid: false, reason: 'unknown' }, 'a lookup id never issued')
  const table: Array<[label: string, key: string, reason: string]> = [
    ['revoked', revoked.key, 'revoked'],
    ['disabled', disabled.key, 'disabled'],
    ['expired', expired.key, 'expired'],
    ['a secret retired by rotation', rotated.key, 'secret_retired']
  ]
  for (const [label, key, reason] of table) {
    for (let i = 0; i < 3; i++) {
      const answer = await s.verifyAnswer(withAnotherSecret(key))
      t.equal(answer.status, unknownAnswer.status, `${label}, another secret: the status of an unknown key`)
      t.equal(answer.text, unknownAnswer.text, `${label}, another secret: the body of an unknown key, byte for byte`)
      t.equal(answer.headers['content-type'], unknownAnswer.headers['content-type'], `${label}: the same content type`)
    }
    t.same(await s.verify(key), { valid: false, reason }, `${label}, its own secret: the state is told to its holder`)
  }
})

t.test('expired: at expires_at the key stops working', async (t) => {
  const s = await setup(t)
  const { key } = await s.create({ name: 'k', permissions: [], expires_at: iso(START + HOUR_MS) })
  s.clock.advance(HOUR_MS - 1)
  t.match(await s.verify(key), { valid: true }, '1 ms before')
  s.clock.advance(1)
  t.same(await s.verify(key), { valid: false, reason: 'expired' }, 'at expires_at')
  s.clock.advance(HOUR_MS)
  t.same(await s.verify(key), { valid: false, reason: 'expired' }, 'later')
})

t.test('revoked and disabled keys', async (t) => {
  const s = await setup(t)
  const revoked = await s.create({ name: 'revoked', permissions: [], expires_at: iso(START + HOUR_MS) })
  const disabled = await s.create({ name: 'disabled', permissions: [], expires_at: iso(START + HOUR_MS) })
  t.equal((await s.admin('POST', `/admin/keys/${revoked.id}/revoke`)).status, 200)
  t.equal((await s.admin('POST', `/admin/keys/${disabled.id}/disable`)).status, 200)
  t.same(await s.verify(revoked.key), { valid: false, reason: 'revoked' })
  t.same(await s.verify(disabled.key), { valid: false, reason: 'disabled' })
  t.equal((await s.admin('POST', `/admin/keys/${disabled.id}/enable`)).status, 200)
  t.match(await s.verify(disabled.key), { valid: true, key: { id: disabled.id } }, 'enabled again')
})

t.test('error: bad bodies and credentials', async (t) => {
  const s = await setup(t)
  for (const [label, body] of [
    ['no key', {}],
    ['a number', { key: 12345 }],
    ['null', { key: null }],
    ['an unknown member', { key: 'hello', debug: true }],
    ['over 1024 characters', { key: 'k'.repeat(1025) }]
  ] as Array<[string, unknown]>) {
    assertProblem(t, await http(`${s.adminUrl}/internal/keys/verify`, { bearer: s.serviceToken, body }), 400, 'validation_failed', label)
  }
  assertProblem(t, await http(`${s.adminUrl}/internal/keys/verify`, { bearer: s.serviceToken, body: 'key=abc', headers: { 'content-type': 'text/plain' } }),
    415, 'unsupported_media_type')
  const { key } = await s.create({ name: 'k', permissions: [], expires_at: iso(START + HOUR_MS) })
  assertProblem(t, await http(`${s.adminUrl}/internal/keys/verify`, { body: { key } }), 401, 'service_unauthorized', 'no credential')
  const withAdminToken = await http(`${s.adminUrl}/internal/keys/verify`, { bearer: s.adminToken, body: { key } })
  assertProblem(t, withAdminToken, 401, 'service_unauthorized', 'the admin token')
  t.notOk(withAdminToken.text.includes(key), 'the presented key is not echoed')
})
