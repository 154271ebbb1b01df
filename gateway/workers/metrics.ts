import { AggregatorRegistry, Counter, Gauge, Registry, type PrometheusContentType } from 'prom-client'
import { CommonProblems } from '../../common/problem.js'
import type { MetricsSource } from '../observability/metrics.js'

/**
 * The primary's own series: how many workers serve and how often one was replaced.
 * No process metrics: the primary only supervises, and the workers' are the ones that
 * say how the gateway does.
 */
export function createSupervisionMetrics (listening: () => number) {
  const registry = new Registry()
  return {
    registry,
    workers: new Gauge({
      name: 'portier_gateway_workers',
      help: 'Workers listening, out of GATEWAY_WORKERS (a clustered gateway only).',
      registers: [registry],
      collect () { this.set(listening()) }
    }),
    restarts: new Counter({
      name: 'portier_gateway_worker_restarts_total',
      help: 'Workers forked to replace one that died (a clustered gateway only).',
      registers: [registry]
    })
  }
}

/**
 * What the primary's metrics listener serves: every worker's registry, summed by
 * prom-client's AggregatorRegistry (counters and histograms added label set by label
 * set; each default process metric by its own aggregator), then the primary's series.
 * A worker that does not answer within prom-client's 5 s fails the scrape with a 503,
 * rather than a total that silently leaves it out.
 */
export function clusterMetricsSource (own: Registry): MetricsSource {
  const aggregator = new AggregatorRegistry<PrometheusContentType>()
  return {
    contentType: aggregator.contentType,
    async metrics () {
      let workers: string
      try {
        workers = await aggregator.clusterMetrics()
      } catch {
        throw CommonProblems.serviceUnavailable()
      }
      return workers + await own.metrics()
    }
  }
}
