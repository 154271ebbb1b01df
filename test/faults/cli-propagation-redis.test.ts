import t from 'tap'
import { existsSync } from 'node:fs'
import { cliPropagation, BOUND_MS, LONG_CACHES, outboxRows, QUICK_ARGON2, USERS_PATH, withKey, type System } from '../helpers/cli-propagation.js'
import { pollUntil } from '../helpers/gateway-auth.js'
import { http } from '../helpers/http.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { builtEntry } from '../helpers/process.js'
import { startProcessStack } from '../helpers/process-stack.js'
import { freePort } from '../helpers/redis.js'

/**
 * Every change the `portier` CLI makes reaches the gateway within 1 s in the split
 * deployment (identity, gateway and upstream in their own processes, on Redis): the
 * CLI publishes on Redis itself, so gateways hear it even while identity is down, and
 * identity relays the database's outbox too (at its next start for what waited).
 * Caches are set to an hour, so only an event can explain a refusal within the bound.
 * `npm start` without Redis: cli-propagation.test.ts.
 */

const leaks = watchForLeaks()
const { portier, createKey, propagationTable } = cliPropagation(leaks)

t.before(() => {
  if (!existsSync(builtEntry('dist/cli/portier.js'))) throw new Error('dist/ is missing: run `npm run build` (npm test does)')
})

t.test(`split deployment on Redis: each CLI change reaches the gateway within ${BOUND_MS} ms`, async (t) => {
  const s = await startProcessStack(t, { leaks, identityEnv: QUICK_ARGON2, gatewayEnv: LONG_CACHES })
  const system: System = { gateway: s.gateway.url, admin: s.identity.admin, cliEnv: s.env.identity }
  await propagationTable(t, system, 'split deployment on Redis')

  await t.test('identity down: the CLI still reaches the gateway through Redis; identity relays the outbox at its next start', async (t) => {
    const key = await createKey(system)
    const other = await createKey(system)
    for (const k of [key, other]) t.equal((await http(`${s.gateway.url}${USERS_PATH}`, withKey(k.key))).status, 200, 'cached while identity is up')
    await s.identity.stop()

    const direct = await portier(system.cliEnv, ['keys', 'revoke', key.id])
    t.equal(direct.code, 0)
    t.equal(direct.stderr, '', 'Redis reachable: published directly, nothing to warn about')
    // Evicted, and identity cannot vouch for it: refused closed (503), as any uncached key while identity is down.
    const refused = await pollUntil(async () => (await http(`${s.gateway.url}${USERS_PATH}`, withKey(key.key))).status === 503, { since: direct.answeredAt, timeoutMs: 5_000 })
    t.ok(refused !== null && refused <= BOUND_MS, `no longer served from the cache ${String(refused)} ms after the CLI's answer, identity being down (503)`)

    // A CLI that cannot reach Redis: only the outbox carries the change.
    const unreachable = await portier({ ...system.cliEnv, REDIS_URL: `redis://127.0.0.1:${await freePort()}` }, ['keys', 'revoke', other.id])
    t.equal(unreachable.code, 0)
    t.match(unreachable.stderr, /^warning: Redis \(REDIS_URL\) is not reachable/m)
    t.equal((await http(`${s.gateway.url}${USERS_PATH}`, withKey(other.key))).status, 200, 'the gateway has not heard of it yet (its cache holds the key)')
    t.equal(outboxRows(s.identity.databasePath), 2, 'both events wait in the outbox')

    await s.identity.restart()
    const restartedAt = performance.now()
    const relayed = await pollUntil(async () => (await http(`${s.gateway.url}${USERS_PATH}`, withKey(other.key))).status === 401, { since: restartedAt, timeoutMs: 5_000 })
    t.ok(relayed !== null && relayed <= BOUND_MS, `identity relayed it at start: refused ${String(relayed)} ms after identity answered again`)
    t.equal(outboxRows(s.identity.databasePath), 0, 'the outbox is empty again')
  })
})

t.test('no log line or CLI warning holds a secret', async (t) => {
  await leaks.assertNoLeaks(t)
})
