import t from 'tap'
import { existsSync } from 'node:fs'
import { cliPropagation, BOUND_MS, NOT_RELAYED, outboxRows, USERS_PATH, withKey } from '../helpers/cli-propagation.js'
import { pollUntil } from '../helpers/gateway-auth.js'
import { http } from '../helpers/http.js'
import { tempDir } from '../helpers/temp.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { builtEntry } from '../helpers/process.js'

/**
 * Every change the `portier` CLI makes reaches `npm start`'s gateway within 1 s, as
 * shipped (one process, no Redis): the CLI's events travel through the database's
 * outbox, which identity relays on its in-process bus. The gateway's caches are set to
 * an hour, so only an event can explain a refusal within the bound. Each change is
 * measured from the moment the CLI printed its answer (the change is committed just
 * before) to the gateway's first answer reflecting it. The split deployment on Redis:
 * cli-propagation-redis.test.ts.
 */

const leaks = watchForLeaks()
const { portier, createKey, loggedInUser, propagationTable, startDemo } = cliPropagation(leaks)

t.before(() => {
  if (!existsSync(builtEntry('dist/cli/portier.js'))) throw new Error('dist/ is missing: run `npm run build` (npm test does)')
})

t.test(`npm start (no Redis): each CLI change reaches the gateway within ${BOUND_MS} ms`, async (t) => {
  const demo = await startDemo(t, tempDir(t, 'portier-cli-propagation-'))
  await propagationTable(t, demo.system, 'npm start')

  await t.test('a signing key rotated by the CLI signs tokens the gateway accepts at once', async (t) => {
    const user = await loggedInUser(demo.system)
    const cli = await portier(demo.system.cliEnv, ['signing-keys', 'rotate'])
    t.equal(cli.code, 0)
    t.notMatch(cli.stderr, NOT_RELAYED)
    const login = await http(`${demo.system.gateway}/sessions`, { body: { session: { email: user.email, password: user.password } } })
    leaks.secret(login.body.access_token, login.body.refresh_token)
    t.equal(JSON.parse(Buffer.from((login.body.access_token as string).split('.')[0] as string, 'base64url').toString()).kid, cli.json.signing_key.kid, 'the new key signs')
    const accepted = await pollUntil(async () => (await http(`${demo.system.gateway}${USERS_PATH}`, { bearer: login.body.access_token })).status === 200, { since: cli.answeredAt, timeoutMs: 5_000 })
    t.ok(accepted !== null && accepted <= BOUND_MS, `accepted ${String(accepted)} ms after the CLI's answer`)
  })

  t.equal(outboxRows(demo.env.IDENTITY_DATABASE_PATH as string), 0, 'every relayed event left the outbox')
})

t.test('npm start stopped: the CLI says the change waits, and the next start relays it', async (t) => {
  const dir = tempDir(t, 'portier-cli-propagation-')
  const first = await startDemo(t, dir)
  const key = await createKey(first.system)
  first.process.child.kill('SIGINT')
  t.equal((await first.process.exited).code, 0, 'stopped')

  const cli = await portier(first.env, ['keys', 'revoke', key.id])
  t.equal(cli.code, 0, 'the change is made')
  t.match(cli.json, { api_key: { id: key.id, status: 'revoked' } })
  t.match(cli.stderr, /^warning: the change is saved, but no identity server relayed it to the gateways within 1 s \(is Portier running, on this IDENTITY_DATABASE_PATH\?\)/m,
    'the operator learns that no gateway was told yet')
  t.equal(outboxRows(first.env.IDENTITY_DATABASE_PATH as string), 1, 'the event waits in the outbox')

  const again = await startDemo(t, dir)
  t.equal(outboxRows(again.env.IDENTITY_DATABASE_PATH as string), 0, 'the next start relayed it')
  t.equal((await http(`${again.system.gateway}${USERS_PATH}`, withKey(key.key))).status, 401, 'and the key is refused')
})

t.test('no log line or CLI warning holds a secret', async (t) => {
  await leaks.assertNoLeaks(t)
})
