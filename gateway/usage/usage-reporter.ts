import type { FastifyBaseLogger } from 'fastify'
import {
  KEY_USAGE_IP_MAX_LENGTH, KEY_USAGE_IP_PATTERN, KEY_USAGE_MAX_ENTRIES, KEY_USAGE_MAX_HOURS, KEY_USAGE_ROUTE_MAX_LENGTH, KEY_USAGE_ROUTE_PATTERN,
  type KeyUse, type KeyUsageHour, type KeyUsageReport
} from '../../common/internal-api.js'
import { randomBase62 } from '../../common/random.js'
import type { IdentityClient } from '../auth/identity-client.js'
import { refusedForGood } from '../auth/identity-client.js'
import type { GatewayMetrics } from '../observability/metrics.js'
import type { HourOutcomes, SecretUsage, UsageCounter } from './usage-counter.js'

/** The longest wait between two tries while identity does not take reports (unless the interval is longer). */
export const MAX_BACKOFF_MS = 60_000

export interface UsageReporterOptions {
  counter: UsageCounter
  identity: Pick<IdentityClient, 'reportKeyUsage'>
  intervalMs: number
  /** The counter's bound, for the log line that says it was reached. */
  maxKeys: number
  metrics: Pick<GatewayMetrics, 'keyUsageFlushes' | 'keyUsageDropped'>
  log: FastifyBaseLogger
}

const routeShape = new RegExp(KEY_USAGE_ROUTE_PATTERN)
const ipShape = new RegExp(KEY_USAGE_IP_PATTERN)

/** What identity would refuse is sent as null rather than have the whole report refused. */
const routeOf = (route: string): string | null => route.length <= KEY_USAGE_ROUTE_MAX_LENGTH && routeShape.test(route) ? route : null
// Node leaves a socket's remote address undefined once the client is gone: typed a string, checked as what it is.
const ipOf = (ip: string | undefined): string | null => typeof ip === 'string' && ip.length <= KEY_USAGE_IP_MAX_LENGTH && ipShape.test(ip) ? ip : null

/** A report, and how many lookup ids' places it gives back once done with (each id's in the report with its last part). */
interface PendingReport { report: KeyUsageReport, keys: number }

const hourEntry = (lookupId: string, hour: HourOutcomes): KeyUsageHour => ({
  lookup_id: lookupId,
  hour_start: new Date(hour.start).toISOString(),
  allowed: hour.allowed,
  forbidden: hour.forbidden,
  rate_limited: hour.rate_limited,
  quota_exhausted: hour.quota_exhausted,
  upstream_error: hour.upstream_error
})

/**
 * Taken usage as reports of at most KEY_USAGE_MAX_ENTRIES uses and KEY_USAGE_MAX_HOURS
 * hours, each under an id of its own. A secret only refused since the last take has
 * hours and no use.
 */
function reportsOf (taken: Map<string, SecretUsage>): PendingReport[] {
  const reports: PendingReport[] = []
  let uses: KeyUse[] = []
  let hours: KeyUsageHour[] = []
  let keys = 0
  const cut = (): void => {
    reports.push({ report: { batch_id: randomBase62(24), uses, hours }, keys })
    uses = []
    hours = []
    keys = 0
  }
  for (const [lookupId, usage] of taken) {
    if (usage.count > 0) {
      if (uses.length === KEY_USAGE_MAX_ENTRIES) cut()
      uses.push({ lookup_id: lookupId, count: usage.count, last_used_at: new Date(usage.lastUsedAt).toISOString(), last_route: routeOf(usage.route), last_ip: ipOf(usage.ip) })
    }
    for (const hour of usage.earlier === null ? [usage.hour] : [...usage.earlier, usage.hour]) {
      if (hours.length === KEY_USAGE_MAX_HOURS) cut()
      hours.push(hourEntry(lookupId, hour))
    }
    keys++
  }
  if (hours.length > 0) cut()
  return reports
}

const usesIn = (reports: readonly PendingReport[]): number =>
  reports.reduce((sum, { report }) => sum + report.uses.reduce((n, use) => n + use.count, 0), 0)

/**
 * Sends what the counter counted to identity every `intervalMs`, off the request path.
 * A report identity did not acknowledge (down, slow, answering outside the contract)
 * is kept as it was, under the same batch id, and sent again first, after a backoff
 * that doubles up to a minute; identity applies each batch id once, so a report whose
 * answer was lost after identity committed it is not counted twice. Uses counted
 * meanwhile wait in the counter, within its bound. `close` sends what is left, once.
 */
export function createUsageReporter (options: UsageReporterOptions) {
  const { counter, identity, metrics, log } = options
  /** Taken from the counter and not yet acknowledged, oldest first. */
  let unsent: PendingReport[] = []
  let warnedOfOlderIdentity = false
  let failures = 0
  let timer: NodeJS.Timeout | null = null
  let running: Promise<void> | null = null
  let closed = false

  function noteOverflow (): void {
    const dropped = counter.takeOverflow()
    if (dropped === 0) return
    metrics.keyUsageDropped.inc({ reason: 'overflow' }, dropped)
    log.warn({ dropped, maxKeys: options.maxKeys }, 'key uses not counted: the gateway already holds the uses of as many keys as it may until they are reported')
  }

  /**
   * Sends one report. An identity older than the hourly outcomes refuses a report that
   * has them (400, nothing applied): the same batch is sent again without them, when
   * it has uses, so use counts keep arriving while identity is upgraded.
   */
  async function deliver (report: KeyUsageReport): Promise<void> {
    try {
      await identity.reportKeyUsage(report)
    } catch (err) {
      if (!refusedForGood(err) || report.hours === undefined) throw err
      if (!warnedOfOlderIdentity) {
        warnedOfOlderIdentity = true
        log.warn({ err: { message: (err as Error).message } }, 'identity refused a key usage report with hourly outcomes: sent without them (is identity older than this gateway?)')
      }
      if (report.uses.length > 0) await identity.reportKeyUsage({ batch_id: report.batch_id, uses: report.uses })
    }
  }

  /** Sends the unsent reports in order; false at the first that identity did not take (it stays first). */
  async function sendUnsent (): Promise<boolean> {
    while (unsent.length > 0) {
      const pending = unsent[0] as PendingReport
      try {
        await deliver(pending.report)
        metrics.keyUsageFlushes.inc({ outcome: 'ok' })
      } catch (err) {
        if (!refusedForGood(err)) {
          metrics.keyUsageFlushes.inc({ outcome: 'failed' })
          log.warn({ err: { message: (err as Error).message }, reports: unsent.length, uses: usesIn(unsent), failures: failures + 1 },
            'key usage report failed: kept, and sent again')
          return false
        }
        metrics.keyUsageFlushes.inc({ outcome: 'refused' })
        metrics.keyUsageDropped.inc({ reason: 'refused' }, usesIn([pending]))
        log.error({ err: { message: (err as Error).message }, uses: usesIn([pending]) }, 'identity refused a key usage report: its uses are dropped')
      }
      unsent.shift()
      counter.release(pending.keys)
    }
    return true
  }

  /** Sends what is unsent, or else what the counter holds now: false when identity did not take it all. */
  async function flush (): Promise<boolean> {
    noteOverflow()
    if (unsent.length === 0) unsent = reportsOf(counter.take())
    return await sendUnsent()
  }

  function schedule (): void {
    if (closed) return
    const delay = failures === 0 ? options.intervalMs : Math.min(options.intervalMs * 2 ** failures, Math.max(options.intervalMs, MAX_BACKOFF_MS))
    timer = setTimeout(() => {
      timer = null
      running = flush()
        .then((done) => { failures = done ? 0 : failures + 1 })
        .catch((err: unknown) => { failures++; log.error({ err }, 'key usage report failed unexpectedly') })
        .finally(() => { running = null; schedule() })
    }, delay)
    // Reporting never keeps a process alive: close() sends what is left.
    timer.unref()
  }

  return {
    start (): void {
      if (timer === null && running === null && !closed) schedule()
    },

    /** Stops the timer and sends what is left, one try each; what identity does not take then is logged as lost. */
    async close (): Promise<void> {
      if (closed) return
      closed = true
      if (timer !== null) clearTimeout(timer)
      timer = null
      await running
      // The first flush may only have sent reports held from before; the second takes what the counter holds.
      let done = await flush()
      if (done && counter.size > 0) done = await flush()
      if (done) return
      const lost = [...unsent, ...reportsOf(counter.take())]
      unsent = []
      metrics.keyUsageDropped.inc({ reason: 'shutdown' }, usesIn(lost))
      log.warn({ uses: usesIn(lost), keys: lost.reduce((n, pending) => n + pending.keys, 0) },
        'key uses not reported: identity did not take them before shutdown')
    }
  }
}

export type UsageReporter = ReturnType<typeof createUsageReporter>
