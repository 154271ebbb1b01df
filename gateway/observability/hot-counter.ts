import { Counter, type Registry } from 'prom-client'

/** One series of a hot counter: bumping it is an addition. */
export interface CounterSeries { inc: (by?: number) => void }

interface PendingSeries<L extends string> extends CounterSeries {
  readonly labels: Record<L, string>
  count: number
}

/**
 * A prom-client counter for series bumped on every request. Each series counts in a
 * plain number, added to the counter when the registry is read (prom-client's
 * `collect` hook, run by every scrape and every `get()`), so a request pays an
 * addition instead of prom-client's label hashing and lookup. Callers on the hot path
 * take their series once (`series`) or by a key of their own (`at`); the series are as
 * bounded as their labels.
 */
export function createHotCounter<L extends string> (config: { name: string, help: string, labelNames: readonly L[], registry: Registry }) {
  const pending = new Map<string, PendingSeries<L>>()
  const counter = new Counter<L>({
    name: config.name,
    help: config.help,
    labelNames: config.labelNames,
    registers: [config.registry],
    collect () {
      for (const series of pending.values()) {
        if (series.count === 0) continue
        this.inc(series.labels, series.count)
        series.count = 0
      }
    }
  })

  function create (key: string, labels: Record<L, string>): PendingSeries<L> {
    const series: PendingSeries<L> = { labels, count: 0, inc (by = 1) { this.count += by } }
    pending.set(key, series)
    return series
  }

  return {
    counter,
    /** The series of these labels. */
    series (labels: Record<L, string>): CounterSeries {
      const key = config.labelNames.map((name) => labels[name]).join('\u0000')
      return pending.get(key) ?? create(key, labels)
    },
    /** The series under the caller's own key, which must stand for exactly one set of labels (built only the first time). */
    at (key: string, labels: () => Record<L, string>): CounterSeries {
      return pending.get(key) ?? create(key, labels())
    }
  }
}

export type HotCounter<L extends string> = ReturnType<typeof createHotCounter<L>>
