import type { ResolvedRoute } from '../routing/index.js'
import type { CounterSeries, HotCounter } from './hot-counter.js'

type Labels = 'route' | 'method' | 'status'

/**
 * `portier_gateway_requests_total` by matched route pattern, method and status: each
 * route keeps its series by status (made the first time a status is answered), so a
 * request costs a map lookup and an addition. Requests that matched no route count
 * under `unmatched`.
 */
export function createRequestCounter (requests: HotCounter<Labels>) {
  const byRoute = new WeakMap<ResolvedRoute, Map<number, CounterSeries>>()
  return {
    count (route: ResolvedRoute | null, method: string, status: number): void {
      if (route === null) {
        requests.at(`unmatched\u0000${method}\u0000${status}`, () => ({ route: 'unmatched', method, status: String(status) })).inc()
        return
      }
      let byStatus = byRoute.get(route)
      if (byStatus === undefined) byRoute.set(route, byStatus = new Map())
      let series = byStatus.get(status)
      if (series === undefined) {
        series = requests.at(`${route.pattern}\u0000${method}\u0000${status}`, () => ({ route: route.pattern, method, status: String(status) }))
        byStatus.set(status, series)
      }
      series.inc()
    }
  }
}

export type RequestCounter = ReturnType<typeof createRequestCounter>
