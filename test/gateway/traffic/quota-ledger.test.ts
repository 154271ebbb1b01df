import t from 'tap'
import pino from 'pino'
import type { QuotaTotals, QuotaUsageReport } from '../../../common/internal-api.js'
import { IdentityUnreachableError } from '../../../gateway/auth/identity-client.js'
import { createQuotaLedger } from '../../../gateway/traffic/quota-ledger.js'
import { quotaCheck, rateCheck } from '../../helpers/counter-checks.js'

/** The quota units a gateway reports to identity: once per batch id, sent again when unheard, dropped when refused. */

function identityAnswering (answers: Array<'ok' | 'down' | 'refused'>) {
  const reports: QuotaUsageReport[] = []
  return {
    reports,
    quotaUsage: async (report: QuotaUsageReport): Promise<QuotaTotals> => {
      reports.push(structuredClone(report))
      const answer = answers.shift() ?? 'ok'
      if (answer === 'down') throw new IdentityUnreachableError('identity did not answer')
      if (answer === 'refused') throw new IdentityUnreachableError('identity refused the report', { status: 400 })
      return { duplicate: false, counters: report.read.map((r) => ({ ...r, used: 7 })) }
    }
  }
}

const log = pino({ level: 'silent' })
const daily = quotaCheck('key|daily|day|k:key_1', 100, Date.UTC(2026, 0, 1, 12), { periodStart: Date.UTC(2026, 0, 1), cost: 3 })

t.test('units are summed per counter and period; rate checks are not reported', async (t) => {
  const identity = identityAnswering([])
  const ledger = createQuotaLedger({ identity, intervalMs: 60_000, maxPending: 10, log })
  ledger.record([daily, rateCheck('key|burst|10/1s|k:key_1', 10, 1)])
  ledger.record([daily])
  await ledger.close()
  t.same(identity.reports.map((r) => r.uses), [[{ counter: daily.id, period_start: daily.periodStart, count: 6 }]])
})

t.test('a report identity did not hear is sent again under the same batch id', async (t) => {
  const identity = identityAnswering(['down'])
  const ledger = createQuotaLedger({ identity, intervalMs: 20, maxPending: 10, log })
  ledger.start()
  ledger.record([daily])
  await new Promise((resolve) => setTimeout(resolve, 120))
  await ledger.close()
  t.ok(identity.reports.length >= 2)
  t.equal(identity.reports[1]?.batch_id, identity.reports[0]?.batch_id, 'the same batch id: identity applies it once')
})

t.test('a report identity refuses for good is dropped and holds back nothing after it', async (t) => {
  const identity = identityAnswering(['refused'])
  const ledger = createQuotaLedger({ identity, intervalMs: 20, maxPending: 10, log })
  ledger.start()
  ledger.record([daily])
  await new Promise((resolve) => setTimeout(resolve, 60))
  ledger.record([daily])
  await new Promise((resolve) => setTimeout(resolve, 60))
  await ledger.close()
  t.equal(identity.reports.length, 2, 'the refused report was not sent again')
  t.not(identity.reports[1]?.batch_id, identity.reports[0]?.batch_id, 'the next report went out under its own id')
})

t.test('a counter starts from identity\'s count plus what this gateway has not reported yet', async (t) => {
  const identity = identityAnswering([])
  const ledger = createQuotaLedger({ identity, intervalMs: 60_000, maxPending: 10, log })
  ledger.record([daily])
  const [seeded] = await ledger.seeded([daily])
  t.equal(seeded?.seed, 7 + 3)
  await ledger.close()
})
