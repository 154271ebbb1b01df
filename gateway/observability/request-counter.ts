import type { ResolvedRoute } from '../routing/index.js'
import type { CounterSeries, HotCounter } from './hot-counter.js'
import type { HistogramSeries, HotHistogram } from './hot-histogram.js'
import { statusClassOf } from './status-class.js'

type CountLabels = 'route' | 'method' | 'status'
type DurationLabels = 'route' | 'method' | 'status_class'

/** What one (route, method, status) answers into: its counter series and its duration series. */
interface Series { count: CounterSeries, duration: HistogramSeries }

/**
 * `portier_gateway_requests_total` by matched route pattern, method and status, and
 * `portier_gateway_request_duration_seconds` by route pattern, method and status class:
 * each route keeps its series by status (made the first time a status is answered), so
 * a request costs a map lookup, an addition and a bucket search. Requests that matched
 * no route count under `unmatched`.
 */
export function createRequestCounter (requests: HotCounter<CountLabels>, durations: HotHistogram<DurationLabels>) {
  const byRoute = new WeakMap<ResolvedRoute, Map<number, Series>>()
  const unmatched = new Map<string, Series>()

  function seriesOf (pattern: string, method: string, status: number): Series {
    return {
      count: requests.series({ route: pattern, method, status: String(status) }),
      duration: durations.series({ route: pattern, method, status_class: statusClassOf(status) })
    }
  }

  function find (route: ResolvedRoute | null, method: string, status: number): Series {
    if (route === null) {
      const key = `${method}\u0000${status}`
      let series = unmatched.get(key)
      if (series === undefined) unmatched.set(key, series = seriesOf('unmatched', method, status))
      return series
    }
    let byStatus = byRoute.get(route)
    if (byStatus === undefined) byRoute.set(route, byStatus = new Map())
    let series = byStatus.get(status)
    if (series === undefined) byStatus.set(status, series = seriesOf(route.pattern, method, status))
    return series
  }

  return {
    /** One answered request, `seconds` after it reached the gateway. */
    count (route: ResolvedRoute | null, method: string, status: number, seconds: number): void {
      const series = find(route, method, status)
      series.count.inc()
      series.duration.observe(seconds)
    }
  }
}

export type RequestCounter = ReturnType<typeof createRequestCounter>
