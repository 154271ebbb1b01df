import t, { type Test } from 'tap'
import { join } from 'node:path'
import type { TrafficPolicy } from '../../common/traffic/policy.js'
import { parsePolicySpec, policiesFrom } from '../../cli/policy-argument.js'
import { UsageError } from '../../cli/io.js'
import { openDatabase } from '../../identity/store/database.js'
import { runPortierHere, type CliRun } from '../helpers/cli.js'
import { tempDir } from '../helpers/temp.js'
import { WITH_SIGNING_KEY_ENCRYPTION } from '../helpers/signing-key-encryption.js'

/**
 * Traffic policies on the command line: `--policy NAME:KIND:LIMIT[/WINDOW]:PARTITION[:open|closed]`
 * on `roles set`, `keys create` and `keys update` (repeatable; `--no-policies` clears),
 * and `keys create --owner`. A spec the admin API would refuse is refused before the
 * database is touched, naming the option, the spec and what is wrong.
 */

t.test('specs: each kind, every window unit and quota period, and the Redis-loss mode', async (t) => {
  const cases: Array<[string, TrafficPolicy]> = [
    ['burst:rate:100/10s:key', { name: 'burst', kind: 'rate', limit: 100, window_seconds: 10, partition: 'key' }],
    ['per-min:rate:600/1m:ip', { name: 'per-min', kind: 'rate', limit: 600, window_seconds: 60, partition: 'ip' }],
    ['hourly:rate:10000/2h:route:closed', { name: 'hourly', kind: 'rate', limit: 10_000, window_seconds: 7_200, partition: 'route', on_redis_loss: 'closed' }],
    ['daily.v2:rate:5/1d:upstream', { name: 'daily.v2', kind: 'rate', limit: 5, window_seconds: 86_400, partition: 'upstream' }],
    ['monthly:quota:10000/month:user', { name: 'monthly', kind: 'quota', limit: 10_000, period: 'month', partition: 'user' }],
    ['total:quota:1000/never:key', { name: 'total', kind: 'quota', limit: 1_000, period: 'never', partition: 'key' }],
    ['m_1:quota:9007199254740991/minute:key:open', { name: 'm_1', kind: 'quota', limit: Number.MAX_SAFE_INTEGER, period: 'minute', partition: 'key', on_redis_loss: 'open' }],
    ['h:quota:1/hour:ip', { name: 'h', kind: 'quota', limit: 1, period: 'hour', partition: 'ip' }],
    ['d:quota:1/day:route', { name: 'd', kind: 'quota', limit: 1, period: 'day', partition: 'route' }],
    ['inflight:concurrency:5:key', { name: 'inflight', kind: 'concurrency', limit: 5, partition: 'key' }]
  ]
  for (const [spec, policy] of cases) t.same(parsePolicySpec(spec), policy, spec)
})

t.test('specs: what is wrong is refused with the option, the spec and the reason', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['burst', /expected 4 or 5 parts separated by ":", found 1/],
    ['burst:rate:100/10s:key:open:extra', /expected 4 or 5 parts/],
    ['burst:leaky:100/10s:key', /the kind "leaky" is not rate, quota or concurrency/],
    ['burst:rate:lots/10s:key', /the limit "lots" is not a whole number/],
    ['burst:rate:-1/10s:key', /the limit "-1" is not a whole number/],
    ['burst:rate:0/10s:key', /limit must be >= 1/],
    ['burst:rate:100001/10s:key', /limit must be <= 100000/],
    ['burst:rate:100:key', /a rate needs a window after its limit/],
    ['burst:rate:100/10:key', /the window "10" is not a number and a unit \(s, m, h or d\)/],
    ['burst:rate:100/10w:key', /the window "10w" is not a number and a unit/],
    ['burst:rate:100/0s:key', /window_seconds must be >= 1/],
    ['burst:rate:100/2d:key', /window_seconds must be <= 86400/],
    ['burst:rate:100/1s/2s:key', /has more than one "\/"/],
    ['burst:rate:100/10s:tenant', /partition must be one of key, user, ip, route, upstream/],
    ['burst:rate:100/10s:key:maybe', /on_redis_loss must be one of open, closed/],
    ['Burst:rate:100/10s:key', /name must match pattern/],
    [':rate:100/10s:key', /name must match pattern/],
    ['monthly:quota:100/week:key', /a quota needs a period after its limit, one of minute, hour, day, month, never/],
    ['monthly:quota:100:key', /a quota needs a period/],
    ['inflight:concurrency:5/10s:key', /a concurrency cap takes no window/],
    ['inflight:concurrency:5:key:open', /a concurrency cap takes no :open or :closed/]
  ]
  for (const [spec, reason] of cases) {
    t.throws(() => parsePolicySpec(spec), UsageError, `${spec}: a usage error`)
    try {
      parsePolicySpec(spec)
    } catch (err) {
      const message = (err as Error).message
      t.ok(message.startsWith(`--policy ${JSON.stringify(spec)}: `), `${spec}: names the option and the spec`, { message })
      t.match(message, reason, `${spec}: says what is wrong`)
    }
  }
  t.throws(() => parsePolicySpec('burst:leaky:1/1s:key'), { message: /write NAME:KIND:LIMIT\[\/WINDOW\]:PARTITION\[:open\|closed\], e\.g\. burst:rate:100\/10s:key/ },
    'a format mistake shows the format and examples')
})

t.test('lists: absent is no change, --no-policies clears, one name twice or more than 8 are refused', async (t) => {
  t.equal(policiesFrom({ policies: true }), undefined, 'neither option')
  t.same(policiesFrom({ policies: false }), [], '--no-policies')
  t.same(policiesFrom({ policy: ['a:concurrency:1:key', 'b:quota:5/day:user'], policies: true }), [
    { name: 'a', kind: 'concurrency', limit: 1, partition: 'key' },
    { name: 'b', kind: 'quota', limit: 5, period: 'day', partition: 'user' }
  ], 'in the order given')
  t.throws(() => policiesFrom({ policy: ['a:concurrency:1:key', 'a:rate:5/1s:key'] }),
    { message: '--policy "a:rate:5/1s:key": the name "a" is given twice; each policy needs its own name' })
  t.throws(() => policiesFrom({ policy: Array.from({ length: 9 }, (_, i) => `p${i}:concurrency:1:key`) }),
    { message: /^--policy: must NOT have more than 8 items/ })
})

/** A fresh database, initialised as identity's server does, for the in-process CLI. */
function cliEnv (test: Parameters<typeof tempDir>[0]): Record<string, string> {
  const path = join(tempDir(test, 'portier-cli-'), 'identity.db')
  openDatabase(path).close()
  return { IDENTITY_DATABASE_PATH: path, ...WITH_SIGNING_KEY_ENCRYPTION }
}

const json = (run: CliRun): any => JSON.parse(run.stdout)
function exits (test: Pick<Test, 'equal'>, run: CliRun, code: number, label: string): void {
  test.equal(run.code, code, `${label}: exit ${code}`, { stderr: run.stderr })
}

const burst = { name: 'burst', kind: 'rate', limit: 100, window_seconds: 10, partition: 'key' }
const monthly = { name: 'monthly', kind: 'quota', limit: 10_000, period: 'month', partition: 'user' }

t.test('roles set: --policy stores them, none keeps them, --no-policies clears them', async (t) => {
  const env = cliEnv(t)
  const set = await runPortierHere(['roles', 'set', 'partner', '--permissions', 'users:list', '--policy', 'burst:rate:100/10s:key', '--policy', 'monthly:quota:10000/month:user'], env)
  exits(t, set, 0, 'set')
  t.match(json(set), { role: { name: 'partner', permissions: ['users:list'], policies: [burst, monthly] } })

  const kept = await runPortierHere(['roles', 'set', 'partner', '--permissions', 'users:read'], env)
  exits(t, kept, 0, 'kept')
  t.same(json(kept).role.policies, [burst, monthly], 'no --policy: the role keeps its policies')
  const shown = await runPortierHere(['roles', 'show', 'partner'], env)
  t.same(json(shown).role.policies, [burst, monthly], 'show')

  const cleared = await runPortierHere(['roles', 'set', 'partner', '--permissions', 'users:read', '--no-policies'], env)
  exits(t, cleared, 0, 'cleared')
  t.same(json(cleared).role.policies, [])

  const both = await runPortierHere(['roles', 'set', 'partner', '--permissions', 'users:read', '--no-policies', '--policy', 'burst:rate:1/1s:key'], env)
  exits(t, both, 2, '--policy with --no-policies')
  t.match(both.stderr, /cannot be used with/)

  const bad = await runPortierHere(['roles', 'set', 'partner', '--permissions', '*', '--policy', 'burst:rate:200000/10s:key'], env)
  exits(t, bad, 2, 'a rate over the limit')
  t.equal(bad.stderr, 'error: --policy "burst:rate:200000/10s:key": limit must be <= 100000\n')
  t.equal(bad.stdout, '')
  t.match(json(await runPortierHere(['roles', 'show', 'partner'], env)), { role: { permissions: ['users:read'], policies: [] } }, 'nothing was changed')
})

t.test('keys: create with --policy and --owner, update replaces or clears, unknown owners refused', async (t) => {
  const env = cliEnv(t)
  const user = await runPortierHere(['users', 'create', '--email', 'ada@example.com', '--roles', '', '--password-stdin'], env, 'correct horse battery staple\n')
  exits(t, user, 0, 'user')
  const userId = json(user).user.id as string

  const created = await runPortierHere(['keys', 'create', '--name', 'partner', '--permissions', 'users:list', '--expires-in', '30d',
    '--policy', 'burst:rate:100/10s:key', '--owner', userId], env)
  exits(t, created, 0, 'create')
  t.match(json(created), { api_key: { name: 'partner', policies: [burst], owner_user_id: userId }, key: /^ptk_/ })
  const id = json(created).api_key.id as string

  const plain = await runPortierHere(['keys', 'create', '--name', 'plain', '--permissions', 'users:list', '--expires-in', '30d'], env)
  t.match(json(plain), { api_key: { policies: [], owner_user_id: null } }, 'neither option: no policies, nobody\'s')

  const replaced = await runPortierHere(['keys', 'update', id, '--policy', 'monthly:quota:10000/month:user'], env)
  exits(t, replaced, 0, 'update --policy')
  t.match(json(replaced), { api_key: { id, permissions: ['users:list'], policies: [monthly], owner_user_id: userId } }, 'replaced, the rest kept')
  const cleared = await runPortierHere(['keys', 'update', id, '--no-policies'], env)
  exits(t, cleared, 0, 'update --no-policies')
  t.same(json(cleared).api_key.policies, [])

  const nothing = await runPortierHere(['keys', 'update', id], env)
  exits(t, nothing, 2, 'update without a change')
  t.match(nothing.stderr, /--policy or --no-policies/)

  const stranger = await runPortierHere(['keys', 'create', '--name', 'stray', '--permissions', 'users:list', '--owner', 'usr_nobody'], env)
  exits(t, stranger, 1, 'an owner who does not exist')
  t.equal(stranger.stderr, 'error: user_not_found: No user has id usr_nobody.\n')
  const malformed = await runPortierHere(['keys', 'create', '--name', 'stray', '--permissions', 'users:list', '--owner', 'usr-1'], env)
  exits(t, malformed, 2, 'a malformed owner id')
  t.match(malformed.stderr, /^error: --owner: must match pattern/)

  const twice = await runPortierHere(['keys', 'create', '--name', 'stray', '--permissions', 'users:list',
    '--policy', 'a:concurrency:1:key', '--policy', 'a:concurrency:2:key'], env)
  exits(t, twice, 2, 'one name twice')
  t.match(twice.stderr, /the name "a" is given twice/)
  t.same(json(await runPortierHere(['keys', 'list'], env)).api_keys.map((k: { name: string }) => k.name), ['partner', 'plain'], 'no refused key was created')
})
