import { Counter, type Registry } from 'prom-client'
import type { DropReason } from './bounded-export.js'

/**
 * `portier_<service>_tracing_spans_dropped_total{reason}`: the spans a service's tracing
 * never sent (bounded-export.ts counts them), one counter per service so that each
 * service's /metrics names its own.
 */
export function tracingDropsCounter (registry: Registry, service: 'gateway' | 'identity'): Counter<'reason'> {
  return new Counter({
    name: `portier_${service}_tracing_spans_dropped_total`,
    help: 'Spans never sent to the trace collector, by reason: queue_full (OTEL_BSP_MAX_QUEUE_SIZE spans were already waiting or being sent), export_failed (the collector refused them, or did not answer within OTEL_EXPORTER_OTLP_TIMEOUT).',
    labelNames: ['reason'] as const,
    registers: [registry]
  })
}

/** What a service's tracing tells of its drops, counted on `counter`. */
export const countDropsOn = (counter: Counter<'reason'>) => (spans: number, reason: DropReason): void => { counter.inc({ reason }, spans) }
