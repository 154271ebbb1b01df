import t from 'tap'
import { quotaPeriodAt } from '../../common/traffic/quota-period.js'

/**
 * A quota's period: the UTC calendar minute, hour, day or month holding the instant,
 * start inclusive and end exclusive (the next period's start), whatever the local
 * time zone; `never` starts at 0 (one count for all time).
 */

const at = (iso: string): number => Date.parse(iso)
const period = (kind: Parameters<typeof quotaPeriodAt>[0], iso: string): { start: string, end: string } => {
  const { start, end } = quotaPeriodAt(kind, at(iso))
  return { start: new Date(start).toISOString(), end: new Date(end).toISOString() }
}

t.test('minute, hour and day: aligned UTC periods, start inclusive, end exclusive', async (t) => {
  t.same(period('minute', '2024-05-01T12:34:56.789Z'), { start: '2024-05-01T12:34:00.000Z', end: '2024-05-01T12:35:00.000Z' })
  t.same(period('minute', '2024-05-01T12:34:00.000Z'), { start: '2024-05-01T12:34:00.000Z', end: '2024-05-01T12:35:00.000Z' }, 'the first ms of a minute is in it')
  t.same(period('minute', '2024-05-01T12:34:59.999Z'), { start: '2024-05-01T12:34:00.000Z', end: '2024-05-01T12:35:00.000Z' }, 'the last ms too')
  t.same(period('minute', '2024-12-31T23:59:59.999Z'), { start: '2024-12-31T23:59:00.000Z', end: '2025-01-01T00:00:00.000Z' }, 'across the year')

  t.same(period('hour', '2024-05-01T12:34:56.789Z'), { start: '2024-05-01T12:00:00.000Z', end: '2024-05-01T13:00:00.000Z' })
  t.same(period('hour', '2024-05-01T23:00:00.000Z'), { start: '2024-05-01T23:00:00.000Z', end: '2024-05-02T00:00:00.000Z' })
  t.same(period('hour', '2024-05-01T22:59:59.999Z'), { start: '2024-05-01T22:00:00.000Z', end: '2024-05-01T23:00:00.000Z' })

  t.same(period('day', '2024-05-01T12:34:56.789Z'), { start: '2024-05-01T00:00:00.000Z', end: '2024-05-02T00:00:00.000Z' })
  t.same(period('day', '2024-05-01T00:00:00.000Z'), { start: '2024-05-01T00:00:00.000Z', end: '2024-05-02T00:00:00.000Z' }, 'midnight UTC starts a day')
  t.same(period('day', '2024-04-30T23:59:59.999Z'), { start: '2024-04-30T00:00:00.000Z', end: '2024-05-01T00:00:00.000Z' }, '1 ms before: the day before')
  t.same(period('day', '2024-02-29T18:00:00.000Z'), { start: '2024-02-29T00:00:00.000Z', end: '2024-03-01T00:00:00.000Z' }, 'a leap day')
  t.same(period('day', '2024-03-31T01:30:00.000Z'), { start: '2024-03-31T00:00:00.000Z', end: '2024-04-01T00:00:00.000Z' }, 'a DST change elsewhere: still 24 h in UTC')
})

t.test('month: calendar months in UTC', async (t) => {
  t.same(period('month', '2024-05-17T08:00:00.000Z'), { start: '2024-05-01T00:00:00.000Z', end: '2024-06-01T00:00:00.000Z' })
  t.same(period('month', '2024-05-01T00:00:00.000Z'), { start: '2024-05-01T00:00:00.000Z', end: '2024-06-01T00:00:00.000Z' }, 'the first ms of a month')
  t.same(period('month', '2024-04-30T23:59:59.999Z'), { start: '2024-04-01T00:00:00.000Z', end: '2024-05-01T00:00:00.000Z' }, 'the last ms of a 30-day month')
  t.same(period('month', '2024-12-31T23:59:59.999Z'), { start: '2024-12-01T00:00:00.000Z', end: '2025-01-01T00:00:00.000Z' }, 'December ends in January of the next year')
  t.same(period('month', '2025-01-01T00:00:00.000Z'), { start: '2025-01-01T00:00:00.000Z', end: '2025-02-01T00:00:00.000Z' }, 'and January starts it')
  t.same(period('month', '2024-02-29T23:59:59.999Z'), { start: '2024-02-01T00:00:00.000Z', end: '2024-03-01T00:00:00.000Z' }, 'February of a leap year: 29 days')
  t.same(period('month', '2023-02-28T12:00:00.000Z'), { start: '2023-02-01T00:00:00.000Z', end: '2023-03-01T00:00:00.000Z' }, 'February of a common year: 28 days')
  t.same(period('month', '2023-03-01T00:00:00.000Z'), { start: '2023-03-01T00:00:00.000Z', end: '2023-04-01T00:00:00.000Z' })
  t.same(period('month', '2024-01-31T23:59:59.999Z'), { start: '2024-01-01T00:00:00.000Z', end: '2024-02-01T00:00:00.000Z' }, 'the 31st: not rolled over into March')
  const leapFebruary = quotaPeriodAt('month', at('2024-02-10T00:00:00Z'))
  t.equal(leapFebruary.end - leapFebruary.start, 29 * 86_400_000, 'February 2024 lasts 29 days')
  const commonFebruary = quotaPeriodAt('month', at('2023-02-10T00:00:00Z'))
  t.equal(commonFebruary.end - commonFebruary.start, 28 * 86_400_000, 'February 2023 lasts 28 days')
})

t.test('every instant lies in its period, and the next period starts where it ends', async (t) => {
  const kinds = ['minute', 'hour', 'day', 'month'] as const
  let bad = 0
  for (const kind of kinds) {
    for (let now = at('2023-11-15T00:00:00Z'); now < at('2025-03-15T00:00:00Z'); now += 7 * 3_600_000 + 13 * 60_000 + 17_003) {
      const { start, end } = quotaPeriodAt(kind, now)
      const next = quotaPeriodAt(kind, end)
      const last = quotaPeriodAt(kind, end - 1)
      if (!(start <= now && now < end) || next.start !== end || last.start !== start || quotaPeriodAt(kind, start).start !== start) {
        if (bad++ < 5) t.fail(`${kind} at ${new Date(now).toISOString()}: [${new Date(start).toISOString()}, ${new Date(end).toISOString()})`)
      }
    }
  }
  t.equal(bad, 0, 'periods tile time with no gap and no overlap')
})

t.test('never: one period from 0', async (t) => {
  const now = at('2024-05-01T12:34:56.789Z')
  const { start, end } = quotaPeriodAt('never', now)
  t.equal(start, 0, 'starts at 0: the same count forever')
  t.ok(end > now, 'ends after now (how long a cached count is kept)')
  t.equal(quotaPeriodAt('never', at('2031-01-01T00:00:00Z')).start, 0, 'years later: still 0')
})
