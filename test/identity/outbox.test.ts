import t from 'tap'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { createMemoryEventBus } from '../../common/event-bus.js'
import type { AuthEvent } from '../../common/events.js'
import { createOutboxEventBus } from '../../identity/services/outbox-event-bus.js'
import { startOutboxRelay } from '../../identity/services/outbox-relay.js'
import { openDatabase } from '../../identity/store/database.js'
import { createOutboxStore, OUTBOX_BOUNDS } from '../../identity/store/outbox-store.js'
import { fakeClock, tempDir } from '../helpers/identity.js'

/**
 * The event outbox on its own: the CLI's side (written with each event, bounded) and
 * the server's relay (publishes what another connection wrote, then deletes it).
 * Over real processes: test/faults/cli-propagation.test.ts.
 */

const revoked = (keyId: string): AuthEvent => ({ type: 'key.revoked', keyId, at: new Date(0).toISOString() })

function twoConnections (t: Parameters<typeof tempDir>[0]) {
  const path = join(tempDir(t, 'portier-outbox-'), 'identity.db')
  const server = openDatabase(path)
  const cli = openDatabase(path, { create: false })
  t.teardown(() => { cli.close(); server.close() })
  return { server, cli }
}

async function until (check: () => boolean, timeoutMs = 3_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) return false
    await sleep(10)
  }
  return true
}

t.test('bounds: rows older than the retention and beyond the row cap are dropped on each append', async (t) => {
  const { cli } = twoConnections(t)
  t.same(OUTBOX_BOUNDS, { retentionMs: 86_400_000, maxRows: 10_000 }, 'a day, ten thousand rows')
  const store = createOutboxStore(cli, { retentionMs: 60_000, maxRows: 3 })
  const ids = [1, 2, 3, 4, 5].map((n) => store.append(JSON.stringify(revoked(`key_${n}`)), 1_000 + n))
  t.same(store.oldest(10).map((row) => row.id), ids.slice(2), 'only the newest three are kept')
  store.append(JSON.stringify(revoked('key_late')), 1_005 + 60_001)
  t.same(store.oldest(10).map((row) => JSON.parse(row.event).keyId), ['key_late'], 'older than the retention: dropped')
})

t.test('relay: events another connection wrote are published once on the server\'s bus and deleted', async (t) => {
  const { server, cli } = twoConnections(t)
  const bus = createMemoryEventBus()
  const heard: AuthEvent[] = []
  await bus.subscribe((event) => { heard.push(event) })
  const warnings: string[] = []
  const writer = createOutboxEventBus({ store: createOutboxStore(cli), clock: fakeClock(), direct: createMemoryEventBus() })

  // Written while no server ran: published at the relay's start.
  await writer.publish(revoked('key_before'))
  const relay = startOutboxRelay({ store: createOutboxStore(server), events: bus, log: { warn: (_fields, msg) => { warnings.push(msg) } }, intervalMs: 20 })
  t.teardown(async () => { await relay.stop() })
  t.ok(await until(() => heard.length === 1), 'relayed at start')
  t.ok(await writer.relayed(1_000), 'the writer sees its event taken')

  await writer.publish(revoked('key_after'))
  await writer.publish({ type: 'session.revoked', sessionIds: ['ses_1'], userId: 'usr_1', reason: 'admin', at: new Date(0).toISOString() })
  t.ok(await writer.relayed(1_000), 'relayed within the poll interval')
  t.same(heard.map((event) => event.type === 'key.revoked' ? event.keyId : event.type), ['key_before', 'key_after', 'session.revoked'], 'in order, each once')
  t.equal(createOutboxStore(server).oldest(10).length, 0, 'the outbox is empty')

  // A row nobody can read is dropped (and said), not retried forever.
  cli.prepare('INSERT INTO event_outbox (event, created_at) VALUES (?, ?)').run('{"type":"nonsense"}', 0)
  t.ok(await until(() => warnings.length === 1), 'a warning')
  t.match(warnings, ['dropped an unreadable event from the outbox'])
  t.equal(heard.length, 3, 'nothing published for it')
  t.ok(await until(() => createOutboxStore(server).oldest(10).length === 0), 'and it is gone')
})

t.test('relay: nothing to read while no other connection committed; stop waits and ends the polling', async (t) => {
  const { server } = twoConnections(t)
  const store = createOutboxStore(server)
  let reads = 0
  const counting = { ...store, oldest: (limit: number) => { reads++; return store.oldest(limit) } }
  const relay = startOutboxRelay({ store: counting, events: createMemoryEventBus(), log: { warn () {} }, intervalMs: 10 })
  await sleep(200)
  t.equal(reads, 1, 'one read at start, then only the data_version look')
  // The server's own writes do not wake it either.
  store.append(JSON.stringify(revoked('key_own')), 0)
  await sleep(100)
  t.equal(reads, 1, 'its own commit does not change data_version')
  await relay.stop()
})

t.test('writer: without a server, relayed() gives up after its wait', async (t) => {
  const { cli } = twoConnections(t)
  const writer = createOutboxEventBus({ store: createOutboxStore(cli), clock: fakeClock(), direct: createMemoryEventBus() })
  t.ok(await writer.relayed(50), 'nothing written: nothing to wait for')
  t.notOk(writer.wrote())
  await writer.publish(revoked('key_x'))
  t.ok(writer.wrote())
  const started = Date.now()
  t.notOk(await writer.relayed(100), 'not relayed')
  t.ok(Date.now() - started >= 100, 'after the wait')
})
