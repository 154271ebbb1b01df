import { Counter, Registry, collectDefaultMetrics } from 'prom-client'
import { tracingDropsCounter } from '../../common/tracing/drops-metric.js'
import { registerBuildInfo } from '../../common/build-info.js'
import { createHotCounter } from './hot-counter.js'
import { createHotHistogram } from './hot-histogram.js'

/** Seconds: from a cached key's millisecond answer to an upstream's slow one. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/**
 * Prometheus metrics (prom-client), one registry per gateway instance so that two
 * gateways in one process (tests, a host app) never share counters. Labels are
 * bounded: route patterns from config, never raw paths. prom-client's process and
 * Node.js metrics keep their standard names (`process_cpu_seconds_total`,
 * `nodejs_eventloop_lag_seconds`, ...), which stock dashboards and alerts read.
 */
export function createGatewayMetrics () {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  registerBuildInfo(registry, 'gateway')
  return {
    registry,
    // Bumped on every request: counted in plain numbers, handed to prom-client when read.
    requests: createHotCounter({
      name: 'portier_gateway_requests_total',
      help: 'Requests answered, by matched route pattern, method and status.',
      labelNames: ['route', 'method', 'status'] as const,
      registry
    }),
    // Observed on every request, beside `requests`: the gateway's whole answer, refusals included.
    requestDuration: createHotHistogram({
      name: 'portier_gateway_request_duration_seconds',
      help: 'Time from the request reaching the gateway to its answer sent (or the client gone), by matched route pattern, method and status class.',
      labelNames: ['route', 'method', 'status_class'] as const,
      buckets: DURATION_BUCKETS,
      registry
    }),
    authOutcomes: createHotCounter({
      name: 'portier_gateway_auth_outcomes_total',
      help: 'Authentication outcomes by credential kind (api_key, bearer, none) and outcome.',
      labelNames: ['credential', 'outcome'] as const,
      registry
    }),
    keyCache: createHotCounter({
      name: 'portier_gateway_key_cache_total',
      help: 'API key lookups by tier (l1, l2, identity) and result (hit, miss, negative_hit, valid, invalid).',
      labelNames: ['tier', 'result'] as const,
      registry
    }),
    trafficDecisions: createHotCounter({
      name: 'portier_gateway_traffic_decisions_total',
      help: 'Traffic policy decisions by policy name, where it was declared (key, role:<name>, upstream:<name>, route:<method>:<pattern>, anonymous), kind and outcome (allowed, limited, fallback, unavailable). Never a key or user id.',
      labelNames: ['policy', 'source', 'kind', 'outcome'] as const,
      registry
    }),
    // Observed on every proxied request: counted in plain numbers, read when scraped.
    upstreamDuration: createHotHistogram({
      name: 'portier_gateway_upstream_duration_seconds',
      help: 'Time from sending the request upstream to its response headers, by upstream and status class.',
      labelNames: ['upstream', 'status_class'] as const,
      buckets: DURATION_BUCKETS,
      registry
    }),
    keyUsageFlushes: new Counter({
      name: 'portier_gateway_key_usage_flushes_total',
      help: 'Key usage reports sent to identity (at most 500 keys each), by outcome: ok, failed (kept and sent again), refused (identity refused the report: its uses are dropped).',
      labelNames: ['outcome'] as const,
      registers: [registry]
    }),
    keyUsageDropped: new Counter({
      name: 'portier_gateway_key_usage_dropped_total',
      help: 'API key uses never reported to identity, by reason: overflow (more keys in use than the gateway may hold), refused (identity refused their report), shutdown (identity did not take them before the gateway stopped).',
      labelNames: ['reason'] as const,
      registers: [registry]
    }),
    tracingSpansDropped: tracingDropsCounter(registry, 'gateway'),
    invalidations: new Counter({
      name: 'portier_gateway_invalidation_events_total',
      help: 'Invalidation events received from identity, by type.',
      labelNames: ['type'] as const,
      registers: [registry]
    })
  }
}

export type GatewayMetrics = ReturnType<typeof createGatewayMetrics>

/** What GET /metrics renders: a gateway's registry, or the sum of a cluster's workers. */
export type MetricsSource = Pick<Registry, 'contentType' | 'metrics'>
