import type { Metric, MetricValueWithName, Registry } from 'prom-client'

/** One series of a hot histogram: observing is a bucket search and three additions. */
export interface HistogramSeries { observe: (value: number) => void }

interface Series<L extends string> extends HistogramSeries {
  readonly labels: Record<L, string>
  /** Observations per bucket (not cumulative); the last slot is past the largest bound. */
  readonly counts: number[]
  sum: number
  count: number
}

/**
 * A Prometheus histogram for series observed on every request. prom-client's own
 * converts, validates and hashes its labels on every `observe`, even through a child of
 * fixed labels: a few microseconds a request. Here each series is found once (by the
 * caller, who keeps it) and counts in plain numbers; the registry reads the cumulative
 * buckets, sum and count when it is scraped, in the shape of prom-client's histograms
 * (and summed across workers like theirs).
 */
export function createHotHistogram<L extends string> (config: { name: string, help: string, labelNames: readonly L[], buckets: readonly number[], registry: Registry }) {
  const bounds = [...config.buckets].sort((a, b) => a - b)
  const all = new Map<string, Series<L>>()

  function valuesOf (series: Series<L>): Array<MetricValueWithName<string>> {
    const values: Array<MetricValueWithName<string>> = []
    let cumulative = 0
    bounds.forEach((bound, i) => {
      cumulative += series.counts[i] ?? 0
      values.push({ metricName: `${config.name}_bucket`, labels: { le: bound, ...series.labels }, value: cumulative })
    })
    values.push({ metricName: `${config.name}_bucket`, labels: { le: '+Inf', ...series.labels }, value: series.count })
    values.push({ metricName: `${config.name}_sum`, labels: { ...series.labels }, value: series.sum })
    values.push({ metricName: `${config.name}_count`, labels: { ...series.labels }, value: series.count })
    return values
  }

  const metric = {
    name: config.name,
    help: config.help,
    type: 'histogram',
    aggregator: 'sum',
    labelNames: [...config.labelNames],
    // What the registry reads of a metric (prom-client's typings name its type an enum; the registry writes the string).
    async get (): Promise<{ name: string, help: string, type: string, aggregator: string, values: Array<MetricValueWithName<string>> }> {
      return { name: config.name, help: config.help, type: 'histogram', aggregator: 'sum', values: [...all.values()].flatMap(valuesOf) }
    },
    reset (): void {
      for (const series of all.values()) {
        series.counts.fill(0)
        series.sum = 0
        series.count = 0
      }
    }
  }
  config.registry.registerMetric(metric as unknown as Metric<string>)

  return {
    /** The series of these labels (made the first time they are asked for). */
    series (labels: Record<L, string>): HistogramSeries {
      const key = config.labelNames.map((name) => labels[name]).join('\u0000')
      let series = all.get(key)
      if (series === undefined) {
        const made: Series<L> = {
          labels,
          counts: new Array<number>(bounds.length + 1).fill(0),
          sum: 0,
          count: 0,
          observe (value: number): void {
            let i = 0
            while (i < bounds.length && value > (bounds[i] ?? Number.POSITIVE_INFINITY)) i++
            made.counts[i] = (made.counts[i] ?? 0) + 1
            made.sum += value
            made.count++
          }
        }
        series = made
        all.set(key, series)
      }
      return series
    }
  }
}

export type HotHistogram<L extends string> = ReturnType<typeof createHotHistogram<L>>
