import t from 'tap'
import type { RevokedSession } from '../../../gateway/auth/identity-client.js'
import { createMemoryRevocationShare, type RevocationShare } from '../../../gateway/auth/revocation-share.js'
import { createTokenRevocations } from '../../../gateway/auth/token-revocations.js'
import { fakeClock, silentLog, type Clock } from '../../helpers/auth-caches.js'

/**
 * Revoked sessions and users whose permissions changed: what they refuse, when they
 * are forgotten (a token lifetime of 600 s plus 60 s of skew), and how a gateway
 * catches up from the other gateways' share and from identity's revocation feed.
 */

const FORGET_AFTER_MS = 660_000

interface Feed {
  revokedSessionsSince: (since: number) => Promise<RevokedSession[]>
  asked: number[]
  sessions: RevokedSession[]
  down: boolean
}

function feed (): Feed {
  const f: Feed = {
    asked: [],
    sessions: [],
    down: false,
    async revokedSessionsSince (since) {
      f.asked.push(since)
      if (f.down) throw new Error('identity is down')
      return f.sessions
    }
  }
  return f
}

function gateway (clock: Clock, share: RevocationShare = createMemoryRevocationShare(), identity: Feed = feed()) {
  return createTokenRevocations({ identity, share, log: silentLog, now: clock.now })
}

const seconds = (ms: number): number => Math.floor(ms / 1000)

t.test('a revoked session: refused until no token of it can be alive', async (t) => {
  const clock = fakeClock()
  const revocations = gateway(clock)
  await revocations.revokeSessions(['sid_1'], clock.now())
  t.equal(revocations.check('sid_1', 'usr_1', seconds(clock.now())), 'session_revoked', 'its token is refused')
  t.equal(revocations.check('sid_2', 'usr_1', seconds(clock.now())), null, 'another session of the user is not')

  clock.advance(FORGET_AFTER_MS - 1)
  await revocations.prune()
  t.equal(revocations.check('sid_1', 'usr_1', 0), 'session_revoked', 'kept until a token lifetime and the skew have passed')
  clock.advance(1)
  await revocations.prune()
  t.equal(revocations.check('sid_1', 'usr_1', 0), null, 'then forgotten')
  t.same(revocations.size, { sessions: 0, users: 0 }, 'nothing left')
})

t.test('changed permissions: tokens issued up to the second of the change are refused', async (t) => {
  const clock = fakeClock()
  clock.advance(500) // mid-second: a token issued in this second may predate the change
  const revocations = gateway(clock)
  const at = clock.now()
  await revocations.permissionsChanged(['usr_1'], at)
  t.equal(revocations.check('sid_1', 'usr_1', seconds(at) - 1), 'permissions_changed', 'a token issued before')
  t.equal(revocations.check('sid_1', 'usr_1', seconds(at)), 'permissions_changed', 'a token issued in the same second (fail closed)')
  t.equal(revocations.check('sid_1', 'usr_1', seconds(at) + 1), null, 'a token issued the next second')
  t.equal(revocations.check('sid_1', 'usr_2', seconds(at) - 1), null, 'another user\'s token')

  await revocations.permissionsChanged(['usr_1'], at - 10_000)
  t.equal(revocations.check('sid_1', 'usr_1', seconds(at)), 'permissions_changed', 'an older change heard late does not move the instant back')

  clock.advance(FORGET_AFTER_MS)
  await revocations.prune()
  t.same(revocations.size, { sessions: 0, users: 0 }, 'forgotten once no older token can be alive')
})

t.test('the share: a later instant wins, reads from an instant, trims up to one', async (t) => {
  const share = createMemoryRevocationShare()
  await share.add('revoked-sessions', [['sid_1', 20], ['sid_2', 10]])
  await share.add('revoked-sessions', [['sid_1', 15], ['sid_2', 30]])
  t.same(await share.read('revoked-sessions', 0), [['sid_1', 20], ['sid_2', 30]], 'each member keeps its latest score')
  t.same(await share.read('revoked-sessions', 30), [['sid_2', 30]], 'read from an instant, inclusive')
  t.same(await share.read('stale-users', 0), [], 'the sets are apart')
  await share.trim('revoked-sessions', 20)
  t.same(await share.read('revoked-sessions', 0), [['sid_2', 30]], 'trimmed up to an instant, inclusive')
})

t.test('catch-up: a gateway learns from the share what others heard', async (t) => {
  const clock = fakeClock()
  const share = createMemoryRevocationShare()
  const first = gateway(clock, share)
  await first.revokeSessions(['sid_1'], clock.now())
  await first.permissionsChanged(['usr_1'], clock.now())

  clock.advance(60_000)
  const late = gateway(clock, share)
  t.equal(late.check('sid_1', 'usr_9', 0), null, 'a gateway started later knows nothing before it syncs')
  await late.sync()
  t.equal(late.check('sid_1', 'usr_9', 0), 'session_revoked', 'after the sync: the revoked session')
  t.equal(late.check('sid_9', 'usr_1', seconds(clock.now()) - 60), 'permissions_changed', 'and the user whose permissions changed')

  clock.advance(FORGET_AFTER_MS)
  await first.prune()
  t.same(await share.read('revoked-sessions', 0), [], 'a prune trims the share: no live token of the session is left')
  t.same(await share.read('stale-users', 0), [], 'nor one of the user issued before the change')
})

t.test('catch-up: identity\'s revocation feed, asked from where the last sync ended', async (t) => {
  const clock = fakeClock()
  const share = createMemoryRevocationShare()
  const identity = feed()
  const revocations = gateway(clock, share, identity)
  const revokedAt = clock.now() - 30_000
  identity.sessions = [
    { id: 'sid_long', revoked_at: new Date(revokedAt).toISOString(), expires_at: new Date(clock.now() + 86_400_000).toISOString() },
    { id: 'sid_ending', revoked_at: new Date(revokedAt).toISOString(), expires_at: new Date(clock.now() + 10_000).toISOString() }
  ]
  await revocations.sync()
  t.same(identity.asked, [clock.now() - FORGET_AFTER_MS], 'the first sync asks for a token lifetime and the skew back')
  t.equal(revocations.check('sid_long', 'usr_1', 0), 'session_revoked', 'a session revoked while no event was heard')
  t.same((await share.read('revoked-sessions', 0)).sort(), [['sid_ending', clock.now() + 70_000], ['sid_long', revokedAt + FORGET_AFTER_MS]],
    'shared, to be forgotten a token lifetime after the revocation, or soon after the session\'s own end')

  const firstSyncAt = clock.now()
  clock.advance(300_000)
  identity.down = true
  await revocations.sync()
  t.same(identity.asked.at(-1), firstSyncAt - 60_000, 'the next sync overlaps the last by the skew')
  clock.advance(1_000)
  await revocations.sync()
  t.same(identity.asked.at(-1), firstSyncAt - 60_000, 'a failed sync does not move the starting point')

  clock.advance(FORGET_AFTER_MS)
  await revocations.prune()
  t.equal(revocations.check('sid_long', 'usr_1', 0), null, 'forgotten in time')
})

t.test('a sync with a source failing still applies the other', async (t) => {
  const clock = fakeClock()
  const share = createMemoryRevocationShare()
  await share.add('revoked-sessions', [['sid_shared', clock.now() + 60_000]])
  const identity = feed()
  identity.down = true
  const fromShare = gateway(clock, share, identity)
  await fromShare.sync()
  t.equal(fromShare.check('sid_shared', 'usr_1', 0), 'session_revoked', 'identity down: the share still tells')

  const broken: RevocationShare = { ...createMemoryRevocationShare(), read: async () => { throw new Error('redis is down') } }
  const working = feed()
  working.sessions = [{ id: 'sid_fed', revoked_at: new Date(clock.now()).toISOString(), expires_at: new Date(clock.now() + 60_000).toISOString() }]
  const fromFeed = gateway(clock, broken, working)
  await fromFeed.sync()
  t.equal(fromFeed.check('sid_fed', 'usr_1', 0), 'session_revoked', 'the share unreadable: identity\'s feed still tells')
})
