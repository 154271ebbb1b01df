import t from 'tap'
import Database from 'better-sqlite3'
import { join } from 'node:path'
import { userInfo } from 'node:os'
import { openDatabase } from '../../identity/store/database.js'
import { startIdentity, tempDir } from '../helpers/identity.js'
import { adminClient } from '../helpers/http.js'
import { runPortierHere } from '../helpers/cli.js'
import { WITH_SIGNING_KEY_ENCRYPTION } from '../helpers/signing-key-encryption.js'
import { nodeCommand } from '../helpers/node-command.js'
import { REPO_ROOT } from '../helpers/repo-root.js'
import { spawn } from 'node:child_process'

/**
 * `portier audit list | verify | check-head` on a database a server opens too: the
 * same records, filters and pages as GET /admin/audit, and exit codes that say when
 * the chain is broken or a signed head no longer matches.
 */

function cliEnv (t: Parameters<typeof tempDir>[0]): Record<string, string> {
  const path = join(tempDir(t, 'portier-cli-'), 'identity.db')
  openDatabase(path).close()
  return { IDENTITY_DATABASE_PATH: path, ...WITH_SIGNING_KEY_ENCRYPTION }
}

async function portier (env: Record<string, string>, args: string[]) {
  const result = await runPortierHere(args, env)
  let json: any = null
  try { json = JSON.parse(result.stdout) } catch {}
  return { ...result, json }
}

t.test('list: what the CLI changed, by the OS user; filters, pages, table', async (t) => {
  const env = cliEnv(t)
  for (const name of ['alpha', 'beta', 'gamma']) t.equal((await portier(env, ['roles', 'set', name, '--permissions', 'tasks:read'])).code, 0)
  t.equal((await portier(env, ['roles', 'delete', 'beta'])).code, 0)

  const all = await portier(env, ['audit', 'list'])
  t.equal(all.code, 0, 'lists', { stderr: all.stderr })
  t.same(all.json.records.map((r: any) => r.action), ['role.remove', 'role.create', 'role.create', 'role.create', 'signing_key.create'], 'newest first')
  t.match(all.json.records[0], { actor: { type: 'cli', id: userInfo().username }, target: { type: 'role', id: 'beta' }, source: { ip: null } })
  t.match(all.json.records.at(-1), { actor: { type: 'system', id: 'identity' } }, 'the first signing key: made by identity at its first start')
  t.equal(all.json.next_cursor, null)

  const filtered = await portier(env, ['audit', 'list', '--action', 'role.create', '--order', 'oldest', '--limit', '2'])
  t.same(filtered.json.records.map((r: any) => r.target.id), ['alpha', 'beta'])
  const rest = await portier(env, ['audit', 'list', '--action', 'role.create', '--order', 'oldest', '--limit', '2', '--cursor', filtered.json.next_cursor])
  t.same(rest.json.records.map((r: any) => r.target.id), ['gamma'])
  t.same((await portier(env, ['audit', 'list', '--target-id', 'beta', '--actor-type', 'cli'])).json.records.map((r: any) => r.action), ['role.remove', 'role.create'])

  const table = await portier(env, ['--format', 'table', 'audit', 'list', '--limit', '1'])
  t.match(table.stdout, /^SEQ\s+AT\s+ACTION\s+OUTCOME\s+ERROR_CODE\s+ACTOR\s+TARGET/)
  t.match(table.stdout, /role\.remove\s+success/)

  const bad = await portier(env, ['audit', 'list', '--actor-type', 'robot'])
  t.equal(bad.code, 2, 'a bad filter is a usage error')
  t.match(bad.stderr, /--actor-type/)
  const badCursor = await portier(env, ['audit', 'list', '--cursor', 'bm9wZQ'])
  t.equal(badCursor.code, 1)
  t.match(badCursor.stderr, /validation_failed/)
  const backwards = await portier(env, ['audit', 'list', '--from', '2026-01-02T00:00:00Z', '--to', '2026-01-01T00:00:00Z'])
  t.not(backwards.code, 0, 'a range that ends before it starts is refused, as by the API')
  t.match(backwards.stderr, /must be before to/)
  const leapSecond = await portier(env, ['audit', 'list', '--from', '2026-12-31T23:59:60Z'])
  t.equal(leapSecond.code, 2, 'a time no Date holds is a usage error, as any bad time')
})

t.test('verify and check-head: exit 0 while the trail holds, 1 once it is broken or cut', async (t) => {
  const env = cliEnv(t)
  const server = await startIdentity(t, {}, { databasePath: env.IDENTITY_DATABASE_PATH as string })
  const admin = adminClient(server.adminUrl, server.adminToken)
  for (const name of ['one', 'two', 'three', 'four']) await admin('PUT', `/admin/roles/${name}`, { permissions: [] })
  const head = (await admin('GET', '/admin/audit/head')).body

  const intact = await portier(env, ['audit', 'verify'])
  t.equal(intact.code, 0)
  t.same(intact.json, { valid: true, checked: 5, first_broken_seq: null })
  const matching = await portier(env, ['audit', 'check-head', head.head])
  t.equal(matching.code, 0, 'a head the server signed checks', { stderr: matching.stderr })
  t.match(matching.json, { valid: true, reason: 'matches', seq: 5 })

  const db = new Database(env.IDENTITY_DATABASE_PATH as string)
  db.exec('DROP TRIGGER audit_log_append_only')
  const original = db.prepare('SELECT target_id FROM audit_log WHERE seq = 3').pluck().get()
  db.prepare("UPDATE audit_log SET target_id = 'other' WHERE seq = 3").run()
  const broken = await portier(env, ['audit', 'verify'])
  t.equal(broken.code, 1, 'a broken chain exits 1')
  t.same(broken.json, { valid: false, checked: 2, first_broken_seq: 3 }, 'and prints where')
  t.equal(broken.stderr, 'error: the audit trail is broken at seq 3\n')

  db.prepare('UPDATE audit_log SET target_id = ? WHERE seq = 3').run(original)
  t.equal((await portier(env, ['audit', 'verify'])).code, 0, 'put back, it verifies again')
  db.prepare('DELETE FROM audit_log WHERE seq >= 4').run()
  db.close()
  t.equal((await portier(env, ['audit', 'verify'])).code, 0, 'a cut tail leaves a valid chain')
  const cut = await portier(env, ['audit', 'check-head', head.head])
  t.equal(cut.code, 1, 'which the signed head shows')
  t.match(cut.json, { valid: false, reason: 'record_missing', seq: 5 })
  t.equal(cut.stderr, 'error: the signed head does not match the trail: record_missing\n')
})

/** `portier args…` as operators run it: bin/portier.js in a child process. */
async function portierProcess (env: Record<string, string>, args: string[]): Promise<number | null> {
  const child = spawn(...nodeCommand([join(REPO_ROOT, 'bin', 'portier.js'), ...args]), { cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: 'ignore' })
  return await new Promise((resolve) => child.once('close', resolve))
}

t.test('CLI processes and the server writing at once keep one unbroken chain', async (t) => {
  const env = cliEnv(t)
  const server = await startIdentity(t, {}, { databasePath: env.IDENTITY_DATABASE_PATH as string })
  const admin = adminClient(server.adminUrl, server.adminToken)
  // The server keeps writing for as long as the CLI processes run.
  let cliRunning = true
  const cli = Promise.all(['a', 'b', 'c'].map(async (name) => await portierProcess(env, ['roles', 'set', `cli-${name}`, '--permissions', 'tasks:read'])))
    .finally(() => { cliRunning = false })
  const statuses: number[] = []
  while (cliRunning) statuses.push((await admin('PUT', `/admin/roles/server-${statuses.length}`, { permissions: [] })).status)
  t.same(await cli, [0, 0, 0], 'every CLI write succeeds')
  t.ok(statuses.length > 0 && statuses.every((status) => status === 200), 'and every server write meanwhile')
  const verified = await portier(env, ['audit', 'verify'])
  t.same(verified.json, { valid: true, checked: 1 + 3 + statuses.length, first_broken_seq: null }, 'one record each, in one chain')
})
