import type { ResolvedUpstream } from '../routing/index.js'
import type { HistogramSeries, HotHistogram } from './hot-histogram.js'
import { statusClassOf } from './status-class.js'

/**
 * `portier_gateway_upstream_duration_seconds` by upstream and status class, each series
 * found once per upstream object (a reload makes new ones) and status class.
 */
export function createUpstreamTimer (histogram: HotHistogram<'upstream' | 'status_class'>) {
  const series = new WeakMap<ResolvedUpstream, Map<number, HistogramSeries>>()
  return {
    /** Time from the call to the answer's headers, in seconds. */
    observe (upstream: ResolvedUpstream, status: number, seconds: number): void {
      let byClass = series.get(upstream)
      if (byClass === undefined) series.set(upstream, byClass = new Map())
      const statusClass = Math.floor(status / 100)
      let child = byClass.get(statusClass)
      if (child === undefined) {
        child = histogram.series({ upstream: upstream.name, status_class: statusClassOf(status) })
        byClass.set(statusClass, child)
      }
      child.observe(seconds)
    }
  }
}

export type UpstreamTimer = ReturnType<typeof createUpstreamTimer>
