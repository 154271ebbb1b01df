import { Counter, Registry, collectDefaultMetrics } from 'prom-client'
import { createHotCounter } from './hot-counter.js'
import { createHotHistogram } from './hot-histogram.js'

/**
 * Prometheus metrics (prom-client), one registry per gateway instance so that two
 * gateways in one process (tests, a host app) never share counters. Labels are
 * bounded: route patterns from config, never raw paths.
 */
export function createGatewayMetrics () {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'portier_gateway_' })
  return {
    registry,
    // Bumped on every request: counted in plain numbers, handed to prom-client when read.
    requests: createHotCounter({
      name: 'portier_gateway_requests_total',
      help: 'Requests answered, by matched route pattern, method and status.',
      labelNames: ['route', 'method', 'status'] as const,
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
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
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
