import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { openDatabase } from '../../identity/store/database.js'
import { runPortierHere, type CliRun } from '../helpers/cli.js'
import { startWithAdmin } from '../helpers/session-setup.js'
import { nodeCommand } from '../helpers/node-command.js'
import { REPO_ROOT } from '../helpers/repo-root.js'
import { WITH_SIGNING_KEY_ENCRYPTION } from '../helpers/signing-key-encryption.js'
import { tempDir } from '../helpers/temp.js'

/**
 * `portier --version` prints the package's version; with `--format json` given, what went
 * wrong is one problem+json line on stderr (as the HTTP APIs write problems), with the
 * same exit codes as the plain lines people get otherwise.
 */

const VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version

/** The one line of stderr, parsed; fails the test when stderr is not exactly one JSON line. */
function problemOf (t: Test, run: CliRun): Record<string, unknown> {
  t.match(run.stderr, /^\{[^\n]*\}\n$/, 'stderr is exactly one JSON line')
  return JSON.parse(run.stderr) as Record<string, unknown>
}

function databaseEnv (t: Test): Record<string, string> {
  const path = join(tempDir(t, 'portier-cli-'), 'identity.db')
  openDatabase(path).close()
  return { IDENTITY_DATABASE_PATH: path, ...WITH_SIGNING_KEY_ENCRYPTION }
}

t.test('--version and -V print the version of package.json, on stdout, exit 0', async (t) => {
  t.match(VERSION, /^\d+\.\d+\.\d+/)
  for (const flag of ['--version', '-V']) {
    const run = await runPortierHere([flag])
    t.same(run, { code: 0, stdout: `${VERSION}\n`, stderr: '' }, flag)
  }
  const built = spawnSync(...nodeCommand([join(REPO_ROOT, 'bin', 'portier.js'), '--version']), { cwd: tempDir(t), encoding: 'utf8', timeout: 20_000 })
  t.equal(built.status, 0, 'the installed command, from another folder', { stderr: built.stderr })
  t.equal(built.stdout, `${VERSION}\n`)
  const help = await runPortierHere(['--help'])
  t.match(help.stdout, /-V, --version\s+print the Portier version/, 'and --help lists it')
})

t.test('--format json: usage errors are usage_error problems, exit 2, nothing else written', async (t) => {
  const cases: Array<[args: string[], detail: RegExp]> = [
    [['--format', 'json', 'keys', 'list', '--frobnicate'], /^unknown option '--frobnicate'/],
    [['keys', 'list', '--frobnicate', '--format', 'json'], /^unknown option '--frobnicate'/],
    [['--format', 'json', 'keys', 'frobnicate'], /^unknown command 'frobnicate'/],
    [['--format', 'json', 'keys', 'show'], /^missing required argument 'id'/],
    [['--format', 'json', 'keys', 'list', '--status', 'lost'], /^--status: must be one of active, disabled, revoked, expired, rotating$/],
    [['--format=json', 'keys', 'list', '--expiring', 'soon'], /^--expiring: "soon" is not a number of days/]
  ]
  for (const [args, detail] of cases) {
    const run = await runPortierHere(args, { IDENTITY_DATABASE_PATH: '/nonexistent/identity.db' })
    t.equal(run.code, 2, `${args.join(' ')}: exit 2`)
    t.equal(run.stdout, '', 'nothing on stdout')
    const problem = problemOf(t, run)
    t.match(problem, { type: 'urn:portier:problem:usage_error', title: 'Invalid command line', status: 400, code: 'usage_error', detail }, args.join(' '))
    t.notMatch(run.stderr, /add --help/, 'no text for people beside it')
  }
})

t.test('--format json: configuration errors are configuration_invalid problems listing each, exit 78', async (t) => {
  const badArgon = await runPortierHere(['--format', 'json', 'users', 'list'], { ...databaseEnv(t), IDENTITY_ARGON2_MEMORY_KIB: '1024' })
  t.equal(badArgon.code, 78)
  const problem = problemOf(t, badArgon)
  t.match(problem, { type: 'urn:portier:problem:configuration_invalid', title: 'Invalid configuration', status: 500, code: 'configuration_invalid' })
  t.match(problem.problems, [/^IDENTITY_ARGON2_MEMORY_KIB: must be >= 7168/], 'each problem, as a list')
  t.match(problem.detail, /IDENTITY_ARGON2_MEMORY_KIB/, 'and in the detail')

  const missing = join(tempDir(t), 'nothing.db')
  const noDatabase = await runPortierHere(['--format', 'json', 'keys', 'list'], { IDENTITY_DATABASE_PATH: missing, ...WITH_SIGNING_KEY_ENCRYPTION })
  t.equal(noDatabase.code, 78)
  t.match(problemOf(t, noDatabase), { code: 'configuration_invalid', problems: [/^IDENTITY_DATABASE_PATH: no database at/] })

  const noKey = await runPortierHere(['--format', 'json', 'keys', 'list'], { IDENTITY_DATABASE_PATH: missing })
  t.equal(noKey.code, 78)
  t.match(problemOf(t, noKey), { code: 'configuration_invalid', problems: [/^IDENTITY_SIGNING_KEY_ENCRYPTION_KEY: is required/] })
})

t.test('--format json: a refused operation is the problem the admin API answers, exit 1', async (t) => {
  const s = await startWithAdmin(t)
  const api = await s.admin('GET', '/admin/keys/key_nobody')
  t.equal(api.status, 404)
  for (const args of [['--format', 'json', 'keys', 'show', 'key_nobody'], ['keys', 'show', 'key_nobody', '--format', 'json']]) {
    const run = await runPortierHere(args, s.cliEnv)
    t.equal(run.code, 1, `${args.join(' ')}: exit 1`)
    t.equal(run.stdout, '')
    t.same(problemOf(t, run), api.body, 'the same body as the admin API')
  }
})

t.test('without --format json, failures stay plain lines with the same exit codes', async (t) => {
  const s = await startWithAdmin(t)
  const refused = await runPortierHere(['keys', 'show', 'key_nobody'], s.cliEnv)
  t.same(refused, { code: 1, stdout: '', stderr: 'error: key_not_found: No API key has id key_nobody.\n' }, 'a refused operation (json is only the default output)')
  const table = await runPortierHere(['--format', 'table', 'keys', 'list', '--status', 'lost'], s.cliEnv)
  t.equal(table.code, 2)
  t.equal(table.stderr, 'error: --status: must be one of active, disabled, revoked, expired, rotating\n', '--format table: a usage error')
  const unknown = await runPortierHere(['keys', 'list', '--frobnicate'], s.cliEnv)
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /^error: unknown option '--frobnicate'\n\(add --help for usage\)\n$/, 'commander\'s own message, as before')
  const config = await runPortierHere(['users', 'list'], { ...s.cliEnv, IDENTITY_ARGON2_MEMORY_KIB: '1024' })
  t.equal(config.code, 78)
  t.match(config.stderr, /^Invalid configuration \(identity environment\):\n {2}- IDENTITY_ARGON2_MEMORY_KIB/)
})
