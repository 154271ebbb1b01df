import t from 'tap'
import { runPortierHere } from '../helpers/cli.js'
import { fleetQueries, keyFleet, queryString } from '../helpers/key-hygiene.js'

/**
 * `portier keys list` takes the admin API's key hygiene filters as options (--owner,
 * --status, --expiring 7d, --idle 90d, --never-expires) and answers what GET /admin/keys
 * answers with the same filters, on the same database.
 */

/** The admin API query as `keys list` options; null for what the CLI does not offer (never_expires=false). */
function optionsOf (query: Record<string, string | number | boolean>): string[] | null {
  const args: string[] = []
  for (const [name, value] of Object.entries(query)) {
    if (name === 'owner') args.push('--owner', String(value))
    else if (name === 'status') args.push('--status', String(value))
    else if (name === 'expiring_within_days') args.push('--expiring', `${String(value)}d`)
    else if (name === 'idle_days') args.push('--idle', String(value))
    else if (value === true) args.push('--never-expires')
    else return null
  }
  return args
}

t.test('keys list with filters answers as the admin API does', async (t) => {
  const { s, owners, nameOf } = await keyFleet(t)
  for (const { query, expected } of fleetQueries(owners)) {
    const args = optionsOf(query)
    if (args === null) continue
    const command = ['keys', 'list', ...args]
    const run = await runPortierHere(command, s.cliEnv)
    t.equal(run.code, 0, command.join(' '), { stderr: run.stderr })
    const listed = JSON.parse(run.stdout).api_keys.map((k: { id: string }) => nameOf(k.id)).sort()
    t.same(listed, expected, `${command.join(' ')}: ${expected.join(', ') || 'none'}`)
    const api = await s.admin('GET', `/admin/keys?${queryString(query)}`)
    t.same(JSON.parse(run.stdout), api.body, `${command.join(' ')}: the same answer as the admin API`)
  }
  const table = await runPortierHere(['--format', 'table', 'keys', 'list', '--status', 'rotating'], s.cliEnv)
  t.equal(table.code, 0)
  t.match(table.stdout, /^ID\s+NAME\s+KEY_PREFIX\s+STATUS/m, 'as a table too')
  t.match(table.stdout, /\bN2\b/)
})

t.test('bad filter options are usage errors (exit 2), found before the database is opened', async (t) => {
  const env = { IDENTITY_DATABASE_PATH: '/nonexistent/identity.db' }
  for (const [args, message] of [
    [['--status', 'lost'], /^error: --status: must be one of active, disabled, revoked, expired, rotating/],
    [['--expiring', '0d'], /^error: --expiring: must be >= 1/],
    [['--expiring', '7w'], /^error: --expiring: "7w" is not a number of days; write e.g\. 7d or 7/],
    [['--idle', 'soon'], /^error: --idle: "soon" is not a number of days/],
    [['--owner', 'usr-1'], /^error: --owner: must match pattern/]
  ] as const) {
    const run = await runPortierHere(['keys', 'list', ...args], env)
    t.equal(run.code, 2, args.join(' '), { stderr: run.stderr })
    t.match(run.stderr, message, `${args.join(' ')}: says why`)
    t.equal(run.stdout, '')
  }
})
