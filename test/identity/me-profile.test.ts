import t from 'tap'
import { assertJson, assertStatus } from '../helpers/assert.js'
import { runPortierHere } from '../helpers/cli.js'
import { iso, START } from '../helpers/identity.js'
import { addMember, createOwnKey, daysFrom, startWithMember } from '../helpers/self-service.js'

/**
 * GET /me: the user, what their roles grant, and what self-service allows them; and the
 * CLI's part: a role's self-service key lifetime, and no key name in a user's namespace.
 */

t.test('GET /me: the user, the union of their roles\' permissions, and their allowance', async (t) => {
  const s = await startWithMember(t, {
    env: { IDENTITY_SELF_SERVICE_MAX_KEYS: '5', IDENTITY_SELF_SERVICE_KEY_CHANGES_PER_HOUR: '12', IDENTITY_SELF_SERVICE_KEY_MAX_LIFETIME_DAYS: '30' },
    roles: { reader: ['users:list', 'tasks:read'], writer: ['tasks:*', 'users:list'] }
  })
  const answer = await s.ada.me('GET', '/me')
  assertJson(t, answer, 200)
  t.equal(answer.headers['cache-control'], 'no-store')
  t.same(answer.body, {
    user: { id: s.userId, email: 'ada@example.com', roles: ['reader', 'writer'], created_at: iso(START) },
    permissions: ['tasks:*', 'tasks:read', 'users:list'],
    self_service: { key_max_lifetime_days: 30, max_keys: 5, active_keys: 0, keys_left: 5, key_changes_per_hour: 12 }
  })
  await createOwnKey(t, s.ada.me, { name: 'one', permissions: ['tasks:read'], expires_at: daysFrom(s.clock, 1) })
  t.match((await s.ada.me('GET', '/me')).body.self_service, { active_keys: 1, keys_left: 4 })
  const none = await addMember(t, s, 'nobody@example.com', [])
  t.match((await none.me('GET', '/me')).body, { user: { roles: [] }, permissions: [] }, 'a user without roles holds nothing')
})

t.test('CLI: roles set --key-max-lifetime-days sets, keeps and clears a role\'s lifetime', async (t) => {
  const s = await startWithMember(t, { roles: { reader: ['users:list'] } })
  const run = async (args: string[]) => await runPortierHere(args, s.cliEnv)
  const set = await run(['roles', 'set', 'reader', '--permissions', 'users:list', '--key-max-lifetime-days', '7'])
  t.equal(set.code, 0, 'set', { stderr: set.stderr })
  t.match(JSON.parse(set.stdout), { role: { name: 'reader', key_max_lifetime_days: 7 } })
  t.equal((await s.ada.me('GET', '/me')).body.self_service.key_max_lifetime_days, 7, 'the server applies it')
  const kept = await run(['roles', 'set', 'reader', '--permissions', 'users:list,tasks:read'])
  t.match(JSON.parse(kept.stdout), { role: { key_max_lifetime_days: 7 } }, 'without the option it stays')
  const cleared = await run(['roles', 'set', 'reader', '--permissions', 'users:list', '--no-key-max-lifetime-days'])
  t.match(JSON.parse(cleared.stdout), { role: { key_max_lifetime_days: null } }, '--no-key-max-lifetime-days clears it')
  for (const bad of ['0', '3651', '7d', 'x']) {
    const refused = await run(['roles', 'set', 'reader', '--permissions', 'users:list', '--key-max-lifetime-days', bad])
    t.not(refused.code, 0, `--key-max-lifetime-days ${bad} is refused`)
    t.match(refused.stderr, /--key-max-lifetime-days/)
  }
})

t.test('CLI: keys create refuses a name in a user\'s namespace', async (t) => {
  const s = await startWithMember(t)
  for (const name of [`${s.userId}/squat`, 'usr_x/y']) {
    const refused = await runPortierHere(['keys', 'create', '--name', name, '--permissions', 'users:list', '--expires-in', '1d'], s.cliEnv)
    t.not(refused.code, 0, `${name} is refused`)
    t.match(refused.stderr, /is in that user's own namespace/)
  }
  const allowed = await runPortierHere(['keys', 'create', '--name', 'user_x/y', '--permissions', 'users:list', '--expires-in', '1d'], s.cliEnv)
  t.equal(allowed.code, 0, 'a name outside every user\'s namespace', { stderr: allowed.stderr })
  t.match(JSON.parse(allowed.stdout), { api_key: { name: 'user_x/y', origin: 'cli' } }, 'a key the CLI makes says so')
  assertStatus(t, await s.ada.me('GET', '/me/keys'), 200)
})
