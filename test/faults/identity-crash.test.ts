import t from 'tap'
import Database from 'better-sqlite3'
import { parseApiKey } from '../../common/api-key-format.js'
import { LATEST_SCHEMA_VERSION } from '../../identity/store/migrations.js'
import { assertStatus } from '../helpers/assert.js'
import { http } from '../helpers/http.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { startProcessStack } from '../helpers/process-stack.js'
import { ADA, type TokenSet } from '../helpers/tokens.js'

/**
 * Issue 6, faults: identity SIGKILLed (several times) while clients create API keys
 * through the admin API and rotate a refresh-token chain on the public port. After
 * the last restart the SQLite file passes `PRAGMA integrity_check`, every key the
 * client got a 201 for exists whole and verifies, and no row is half-written.
 *
 * The refresh chain: a refresh whose answer the crash swallowed may or may not have
 * committed. If it did not, the client's token set still refreshes. If it did, the
 * client's refresh token has been used: presenting it again is a reuse, refused with
 * 401 refresh_token_reused and the session revoked, as RFC 9700 asks identity to treat
 * any reuse (it cannot tell a lost answer from a stolen token); the client logs in
 * again. Any other answer is a failure, and so is a reuse refusal when every refresh
 * was acknowledged.
 */

const KILLS = 3
const CREATION_LOOPS = 2

const leaks = watchForLeaks()
const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

/** fetch failed before the request could reach identity: nothing can have happened. */
function refused (err: unknown): boolean {
  return ((err as { cause?: { code?: string } }).cause?.code) === 'ECONNREFUSED'
}

interface Unexpected { what: string, status: number, code?: string }

t.test('kill -9 of identity during key creations and refreshes', async (t) => {
  const s = await startProcessStack(t, { leaks, gateways: 0 })
  const { identity } = s
  const created: Array<{ id: string, key: string, name: string }> = []
  const unacknowledgedNames: string[] = []
  const unexpected: Unexpected[] = []
  let creationsInFlight = 0
  let stopping = false

  async function createKeys (loop: number): Promise<void> {
    for (let n = 0; !stopping; n++) {
      const name = `crash-key-${loop}-${n}`
      let answer
      creationsInFlight++
      try {
        answer = await identity.admin('POST', '/admin/keys', { name, permissions: ['users:list'], expires_at: new Date(Date.now() + 86_400_000).toISOString() })
      } catch (err) {
        // Killed before it answered: the key may or may not exist; the client never saw it.
        if (!refused(err)) unacknowledgedNames.push(name)
        await sleep(50)
        continue
      } finally {
        creationsInFlight--
      }
      if (answer.status === 201) {
        leaks.secret(answer.body.key)
        created.push({ id: answer.body.api_key.id, key: answer.body.key, name })
      } else {
        unexpected.push({ what: `create ${name}`, status: answer.status, code: answer.body?.code })
      }
    }
  }

  async function login (): Promise<TokenSet> {
    for (;;) {
      try {
        const answer = await http(`${identity.publicUrl}/sessions`, { body: { session: ADA } })
        if (answer.status === 201) {
          leaks.secret(answer.body.access_token, answer.body.refresh_token)
          return answer.body
        }
        unexpected.push({ what: 'login', status: answer.status, code: answer.body?.code })
      } catch {}
      await sleep(50)
    }
  }

  const chain = { tokens: await login(), refreshes: 0, lostAnswers: 0, cutByReuse: 0, answerLost: false }
  async function refresh (): Promise<void> {
    let answer
    try {
      answer = await http(`${identity.publicUrl}/tokens`, { bearer: chain.tokens.access_token, body: { refresh_token: chain.tokens.refresh_token } })
    } catch (err) {
      if (!refused(err)) {
        chain.answerLost = true
        chain.lostAnswers++
      }
      await sleep(50)
      return
    }
    if (answer.status === 200) {
      leaks.secret(answer.body.access_token, answer.body.refresh_token)
      chain.tokens = answer.body
      chain.refreshes++
      chain.answerLost = false
    } else if (answer.status === 401 && answer.body?.code === 'refresh_token_reused' && chain.answerLost) {
      chain.cutByReuse++
      chain.tokens = await login()
      chain.answerLost = false
    } else {
      unexpected.push({ what: `refresh (an answer lost before: ${String(chain.answerLost)})`, status: answer.status, code: answer.body?.code })
      chain.tokens = await login()
      chain.answerLost = false
    }
  }
  async function refreshLoop (): Promise<void> { while (!stopping) await refresh() }

  const loops = [...Array.from({ length: CREATION_LOOPS }, async (_, i) => { await createKeys(i) }), refreshLoop()]
  const downtimes: number[] = []
  for (let kill = 0; kill < KILLS; kill++) {
    await sleep(400 + Math.floor(Math.random() * 500))
    for (let waited = 0; creationsInFlight === 0 && waited < 2_000; waited++) await sleep(1)
    t.equal(await identity.kill('SIGKILL'), null, `kill ${kill + 1}: identity SIGKILLed with ${creationsInFlight} key creations in flight`)
    const killedAt = performance.now()
    await identity.restart()
    downtimes.push(Math.round(performance.now() - killedAt))
  }
  await sleep(500)
  stopping = true
  await Promise.all(loops)
  t.ok(created.length > 0, `${created.length} keys created and acknowledged, ${unacknowledgedNames.length} creations cut by a kill; identity was down ${downtimes.join(', ')} ms`)
  t.ok(chain.refreshes > 0, `${chain.refreshes} refreshes acknowledged, ${chain.lostAnswers} answers lost to a kill, ${chain.cutByReuse} chains cut by reuse detection`)
  t.same(unexpected, [], 'every answer was the expected one: 201 for creations, 200 for refreshes, or a reuse refusal after a lost answer')

  const db = new Database(identity.databasePath, { readonly: true, fileMustExist: true })
  t.teardown(() => { db.close() })
  await t.test('the database is intact', async (t) => {
    t.same(db.pragma('integrity_check'), [{ integrity_check: 'ok' }], 'PRAGMA integrity_check is ok')
    t.same(db.pragma('foreign_key_check'), [], 'PRAGMA foreign_key_check finds no dangling reference')
    t.same(db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all(), Array.from({ length: LATEST_SCHEMA_VERSION }, (_, i) => i + 1),
      'the schema is at its version, each migration applied once')
  })

  await t.test('every key the client saw created exists whole and verifies', async (t) => {
    const keyRow = db.prepare('SELECT id, name FROM api_keys WHERE id = ?')
    const secretRows = db.prepare('SELECT lookup_id, secret_hash, retired_at FROM api_key_secrets WHERE key_id = ?')
    const missing: string[] = []
    for (const { id, key, name } of created) {
      const row = keyRow.get(id) as { id: string, name: string } | undefined
      const secrets = secretRows.all(id) as Array<{ lookup_id: string, secret_hash: string, retired_at: number | null }>
      const [secret] = secrets
      const whole = row?.name === name && secrets.length === 1 && secret !== undefined && secret.lookup_id === parseApiKey(key)?.lookupId &&
        /^sha256\$[A-Za-z0-9_-]{43}$/.test(secret.secret_hash) && secret.retired_at === null
      if (!whole) missing.push(name)
    }
    t.same(missing, [], `all ${created.length} acknowledged keys have their row and their one secret, under the name the client gave`)
    const verdicts = await Promise.all(created.map(async ({ id, key }) => {
      const answer = await http(`${identity.adminUrl}/internal/keys/verify`, { bearer: identity.serviceToken, body: { key } })
      return answer.status === 200 && answer.body.valid === true && answer.body.key.id === id
    }))
    t.equal(verdicts.filter((ok) => !ok).length, 0, `all ${created.length} verify at identity's internal endpoint (valid, the right id)`)
    const names = db.prepare('SELECT name FROM api_keys').pluck().all() as string[]
    const known = new Set([...created.map((c) => c.name), ...unacknowledgedNames])
    t.same(names.filter((name) => !known.has(name)), [], 'no key the clients did not ask for')
    t.ok(names.length >= created.length && names.length <= created.length + unacknowledgedNames.length,
      `${names.length} keys stored: the ${created.length} acknowledged, plus ${names.length - created.length} of the ${unacknowledgedNames.length} whose answer was lost`)
  })

  await t.test('no half-written row', async (t) => {
    const count = (sql: string): number => db.prepare(sql).pluck().get() as number
    t.equal(count(`SELECT count(*) FROM api_keys k WHERE
      (SELECT count(*) FROM api_key_secrets s WHERE s.key_id = k.id AND s.retired_at IS NULL) != 1`), 0,
    'every key has exactly one current secret')
    t.equal(count("SELECT count(*) FROM api_key_secrets WHERE secret_hash NOT LIKE 'sha256$%' OR length(secret_hash) != 50 OR length(lookup_id) = 0"), 0,
      'every secret row holds its lookup id and a SHA-256 hash')
    t.equal(count('SELECT count(*) FROM api_keys WHERE permissions IS NULL OR json_valid(permissions) = 0 OR updated_at < created_at'), 0,
      'every key row has valid permissions and consistent times')
    const sessions = count('SELECT count(*) FROM sessions')
    t.ok(sessions >= 1, `${sessions} sessions stored`)
    // Login writes a session with its first refresh token; each rotation marks one used and adds the next, in one transaction.
    t.equal(count(`SELECT count(*) FROM sessions x WHERE
      (SELECT count(*) FROM refresh_tokens r WHERE r.session_id = x.id AND r.used_at IS NULL) != 1`), 0,
    'every session has exactly one unused refresh token')
    t.equal(count('SELECT count(*) FROM refresh_tokens WHERE length(token_hash) != 64 OR expires_at <= created_at OR (used_at IS NOT NULL AND used_at < created_at)'), 0,
      'every refresh token row has its hash and consistent times')
    t.equal(count(`SELECT count(*) FROM sessions x WHERE x.last_used_at < x.created_at OR x.expires_at <= x.created_at OR
      (x.revoked_at IS NULL) != (x.revoked_reason IS NULL)`), 0, 'every session row has consistent times and revocation')
  })

  await t.test('after the crashes, the client carries on', async (t) => {
    const answer = await http(`${identity.publicUrl}/tokens`, { bearer: chain.tokens.access_token, body: { refresh_token: chain.tokens.refresh_token } })
    if (answer.status === 200) leaks.secret(answer.body.access_token, answer.body.refresh_token)
    if (chain.answerLost) t.ok(answer.status === 200 || answer.body?.code === 'refresh_token_reused', 'the last refresh was lost: the chain refreshes, or is refused as a reuse')
    else assertStatus(t, answer, 200, 'the token set the client holds refreshes')
    const fresh = await s.createKey(['users:list'])
    const verified = await http(`${identity.adminUrl}/internal/keys/verify`, { bearer: identity.serviceToken, body: { key: fresh.key } })
    t.match(verified.body, { valid: true, key: { id: fresh.id } }, 'a key created now verifies')
  })

  await leaks.assertNoLeaks(t)
})
