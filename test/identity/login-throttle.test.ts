import t from 'tap'
import { CountersUnavailableError, type CounterStore } from '../../common/traffic/counter.js'
import { createLocalCounters } from '../../common/traffic/local-counters.js'
import { createLoginThrottle, type LoginAttemptGrant } from '../../identity/services/login-throttle.js'
import { fakeClock, type FakeClock } from '../helpers/identity.js'

/**
 * The login throttle on its own (identity/services/login-throttle.ts): failures counted
 * by the traffic-control engine (here its in-process store, or one that answers late as
 * Redis does, or not at all), running checks counted in process. Over HTTP:
 * public-throttle.test.ts (in process), login-throttle-shared.test.ts (Redis).
 */

const WINDOW_SECONDS = 900
const IP = '192.0.2.1'

/**
 * A store that answers late, as Redis does: a look (cost 0) after 0 to 8 ms, a take or a
 * forget after 0 or 1 ms, each answer as of when the call arrived (Redis runs the script
 * then). So a look may come back after attempts that started beside it have failed and
 * ended: what the throttle must not be fooled by.
 */
function lateStore (clock: FakeClock, seed = 1): CounterStore {
  const inner = createLocalCounters({ now: clock.now })
  let state = seed
  const delay = async (most: number): Promise<void> => {
    state = (state * 1103515245 + 12345) % 2147483648
    await new Promise((resolve) => setTimeout(resolve, (state >> 8) % (most + 1)))
  }
  return {
    async take (checks) {
      const answer = inner.take(checks)
      await delay(checks.every((check) => check.cost === 0) ? 8 : 1)
      return answer
    },
    async forget (checks) {
      inner.forget(checks)
      await delay(1)
    }
  }
}

/** A store whose Redis is gone. */
const lostStore = (): CounterStore => ({
  take: async () => { throw new CountersUnavailableError('redis did not answer the traffic counters') },
  forget: async () => { throw new CountersUnavailableError('redis did not answer the traffic counters') }
})

function throttleWith (options: { store?: CounterStore | undefined, perEmail?: number, perIp?: number, clock?: FakeClock } = {}) {
  const clock = options.clock ?? fakeClock()
  const warnings: string[] = []
  const notes: string[] = []
  const throttle = createLoginThrottle({
    enabled: true,
    maxFailuresPerEmail: options.perEmail ?? 3,
    maxFailuresPerIp: options.perIp ?? 100,
    windowSeconds: WINDOW_SECONDS,
    clock,
    ...(options.store !== undefined ? { store: options.store } : {}),
    log: { warn: (msg) => { warnings.push(msg) }, info: (_fields, msg) => { notes.push(msg) } }
  })
  /** One login: a check of a few ms (argon2's stand-in) when let through, counted in `checks`. */
  let checks = 0
  let running = 0
  let mostRunning = 0
  async function login (email: string, right: boolean, ip = IP): Promise<LoginAttemptGrant & { outcome: 201 | 401 | 429 }> {
    const grant = await throttle.attempt(email, ip)
    if (!grant.allowed) return { ...grant, outcome: 429 }
    checks++
    running++
    mostRunning = Math.max(mostRunning, running)
    await new Promise((resolve) => setTimeout(resolve, 2))
    running--
    if (right) await grant.reservation.succeeded()
    else await grant.reservation.failed()
    return { ...grant, outcome: right ? 201 : 401 }
  }
  return { throttle, clock, login, warnings, notes, checks: () => checks, mostRunning: () => mostRunning }
}

const stores = [
  { name: 'in process', store: (): CounterStore | undefined => undefined },
  { name: 'answering late (as Redis does)', store: (clock: FakeClock): CounterStore | undefined => lateStore(clock) }
]

for (const kind of stores) {
  t.test(`failures ${kind.name}`, async (t) => {
    t.test('security: 30 concurrent wrong passwords for one e-mail run 3 checks; the rest get 429 with the whole window', async (t) => {
      const clock = fakeClock()
      const s = throttleWith({ clock, store: kind.store(clock) })
      const answers = await Promise.all(Array.from({ length: 30 }, async () => await s.login('ada@example.com', false)))
      t.equal(s.checks(), 3, 'the limit of checks, no more')
      t.same(answers.map((a) => a.outcome).sort(), [...Array(3).fill(401), ...Array(27).fill(429)])
      for (const answer of answers) if (!answer.allowed) t.equal(answer.retryAfterSeconds, WINDOW_SECONDS)
    })

    t.test('security: 40 concurrent wrong passwords on 40 e-mails from one IP run the IP limit of checks', async (t) => {
      const clock = fakeClock()
      const s = throttleWith({ clock, store: kind.store(clock), perEmail: 5, perIp: 7 })
      const answers = await Promise.all(Array.from({ length: 40 }, async (_, i) => await s.login(`user${i}@example.com`, false)))
      t.equal(s.checks(), 7)
      t.equal(answers.filter((a) => a.outcome === 429).length, 33)
    })

    t.test('security: right and wrong passwords mixed in waves never run more than the limit of failing checks', async (t) => {
      const clock = fakeClock()
      const s = throttleWith({ clock, store: kind.store(clock), perEmail: 4 })
      const answers = await Promise.all(Array.from({ length: 60 }, async (_, i) => await s.login('ada@example.com', i % 5 === 0)))
      const failures = answers.filter((a) => a.outcome === 401).length
      t.ok(s.mostRunning() <= 4, `at most 4 checks at once (${s.mostRunning()})`)
      // A success clears the e-mail's failures, so failures may add up beyond 4 across successes, never 4 in a row unrefused.
      t.ok(failures >= 4, 'the wrong ones fail')
      t.equal(answers.filter((a) => a.outcome === 201).length + failures + answers.filter((a) => a.outcome === 429).length, 60)
    })

    t.test('happy: 20 concurrent right passwords all get through, at most the limit at once', async (t) => {
      const clock = fakeClock()
      const s = throttleWith({ clock, store: kind.store(clock) })
      const answers = await Promise.all(Array.from({ length: 20 }, async () => await s.login('ada@example.com', true)))
      t.same(answers.map((a) => a.outcome), Array(20).fill(201))
      t.ok(s.mostRunning() <= 3, `at most 3 checks at once (${s.mostRunning()})`)
    })

    t.test('a success clears the e-mail\'s failures, not the IP\'s; released is neither', async (t) => {
      const clock = fakeClock()
      const s = throttleWith({ clock, store: kind.store(clock), perEmail: 3, perIp: 4 })
      for (let i = 0; i < 2; i++) t.equal((await s.login('ada@example.com', false)).outcome, 401)
      t.equal((await s.login('ada@example.com', true)).outcome, 201)
      for (let i = 0; i < 2; i++) t.equal((await s.login('ada@example.com', false)).outcome, 401, 'the e-mail starts again')
      // The IP holds 4 failures now: its limit.
      t.equal((await s.login('bob@example.com', true)).outcome, 429, 'the IP\'s failures stayed')

      const other = throttleWith({ clock, store: kind.store(clock), perEmail: 2 })
      t.equal((await other.login('ada@example.com', false)).outcome, 401)
      const grant = await other.throttle.attempt('ada@example.com', IP)
      t.ok(grant.allowed)
      if (grant.allowed) await grant.reservation.released()
      t.equal((await other.login('ada@example.com', false)).outcome, 401, 'released neither counted nor cleared: one failure, room for one')
      t.equal((await other.login('ada@example.com', true)).outcome, 429)
    })

    t.test('a sliding window: each failure leaves the window on its own, and Retry-After is when the oldest does', async (t) => {
      const clock = fakeClock()
      const s = throttleWith({ clock, store: kind.store(clock) })
      t.equal((await s.login('ada@example.com', false)).outcome, 401)
      clock.advance(300_000)
      t.equal((await s.login('ada@example.com', false)).outcome, 401)
      clock.advance(300_000)
      t.equal((await s.login('ada@example.com', false)).outcome, 401)
      const refused = await s.login('ada@example.com', true)
      t.same([refused.outcome, refused.allowed ? 0 : refused.retryAfterSeconds], [429, 300], 'until the first failure leaves the window')
      clock.advance(300_000)
      t.equal((await s.login('ada@example.com', false)).outcome, 401, 'the first left: room for one')
      const again = await s.login('ada@example.com', true)
      t.same([again.outcome, again.allowed ? 0 : again.retryAfterSeconds], [429, 300], 'the second leaves in 300 s')
    })
  })
}

t.test('Redis lost: failures are counted in this process, the throttle stays on, logins never fail for it', async (t) => {
  const s = throttleWith({ store: lostStore() })
  const answers = await Promise.all(Array.from({ length: 10 }, async () => await s.login('ada@example.com', false)))
  t.equal(s.checks(), 3)
  t.equal(answers.filter((a) => a.outcome === 429).length, 7)
  t.equal(s.warnings.length, 1, 'said once, not per login')
  t.match(s.warnings[0], /login failure counts/)
  t.equal((await s.login('bob@example.com', true)).outcome, 201, 'a right password logs in (its clear fails quietly)')
})

t.test('Redis back: failures counted in process during the outage still count, then the shared ones', async (t) => {
  const clock = fakeClock()
  const shared = createLocalCounters({ now: clock.now })
  let up = false
  const flaky: CounterStore = {
    take: async (checks) => { if (!up) throw new CountersUnavailableError('down'); return shared.take(checks) },
    forget: async (checks) => { if (!up) throw new CountersUnavailableError('down'); shared.forget(checks) }
  }
  const s = throttleWith({ clock, store: flaky })
  for (let i = 0; i < 2; i++) t.equal((await s.login('ada@example.com', false)).outcome, 401, 'counted in process')
  up = true
  t.equal((await s.login('ada@example.com', false)).outcome, 401, 'counted in the shared store')
  t.equal((await s.login('ada@example.com', true)).outcome, 429, 'the two of the outage still count beside it: 3 in all')
  t.same(s.notes, ['redis answers the login failure counts again'])
  clock.advance(WINDOW_SECONDS * 1000)
  t.equal((await s.login('ada@example.com', true)).outcome, 201)
  t.equal((await s.login('ada@example.com', false)).outcome, 401)
})

t.test('turned off: every attempt is let through and nothing is counted', async (t) => {
  const throttle = createLoginThrottle({ enabled: false, maxFailuresPerEmail: 1, maxFailuresPerIp: 1, windowSeconds: 60, clock: fakeClock() })
  for (let i = 0; i < 5; i++) {
    const grant = await throttle.attempt('ada@example.com', IP)
    t.ok(grant.allowed)
    if (grant.allowed) await grant.reservation.failed()
  }
})

t.test('a reservation ends once: a second call neither counts nor clears', async (t) => {
  const s = throttleWith({ perEmail: 2 })
  const grant = await s.throttle.attempt('ada@example.com', IP)
  if (!grant.allowed) throw new Error('refused')
  await grant.reservation.failed()
  await grant.reservation.failed()
  await grant.reservation.succeeded()
  t.equal((await s.login('ada@example.com', false)).outcome, 401, 'one failure counted, not cleared: room for one more')
  t.equal((await s.login('ada@example.com', true)).outcome, 429)
})
