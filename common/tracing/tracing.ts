import type { IncomingHttpHeaders } from 'node:http'
import { ROOT_CONTEXT, trace, type Context, type Span, type TextMapGetter, type TextMapSetter, type Tracer } from '@opentelemetry/api'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto'
import { resourceFromAttributes } from '@opentelemetry/resources'
import {
  AlwaysOffSampler, AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler
} from '@opentelemetry/sdk-trace-base'
import { portierVersion } from '../openapi.js'
import { createBoundedExport, type OnDropped } from './bounded-export.js'
import type { SamplerName, TracingConfig } from './config.js'

export type { DropReason, OnDropped } from './bounded-export.js'

/**
 * A service's tracing, once started: its tracer, and the W3C Trace Context it reads
 * from a request and writes on a call it makes. Nothing is registered globally (no
 * global tracer provider, no context manager): the gateway and identity can run in one
 * process (tests, the one-process demo) each with its own, and contexts are passed
 * by hand from a span to its children, which costs no async hook.
 */
export interface Tracing {
  readonly tracer: Tracer
  /** The caller's context from a request's traceparent and tracestate; the root context when it sent none (or none valid). */
  extract: (headers: IncomingHttpHeaders) => Context
  /** The traceparent and tracestate that make `span` the parent of the call they go with, as name, value pairs. */
  headersOf: (span: Span) => string[]
  /** Sends what is held, then stops: spans ended later are not exported. */
  shutdown: () => Promise<void>
}

/** The span a call made on a request's behalf belongs to (the gateway's key check at identity): what the callee is told. */
export interface TraceParent {
  /** traceparent and tracestate, by name. */
  headers: () => Record<string, string>
}

const propagator = new W3CTraceContextPropagator()

const headerGetter: TextMapGetter<IncomingHttpHeaders> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key]
}

const pairSetter: TextMapSetter<string[]> = {
  set: (carrier, key, value) => { carrier.push(key, value) }
}

function samplerOf (name: SamplerName, ratio: number): Sampler {
  switch (name) {
    case 'always_on': return new AlwaysOnSampler()
    case 'always_off': return new AlwaysOffSampler()
    case 'traceidratio': return new TraceIdRatioBasedSampler(ratio)
    case 'parentbased_always_on': return new ParentBasedSampler({ root: new AlwaysOnSampler() })
    case 'parentbased_always_off': return new ParentBasedSampler({ root: new AlwaysOffSampler() })
    case 'parentbased_traceidratio': return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) })
  }
}

/**
 * Starts a service's tracing: spans sampled as configured, sent over OTLP/HTTP (protobuf
 * or JSON) in batches, at most `maxQueueSize` held at once; what is dropped is told to
 * `onDropped` (a metric). Export runs off the request path and each attempt ends within
 * the configured timeout, so a collector that is down or never answers costs requests
 * nothing but the spans.
 */
export function startTracing (config: TracingConfig, onDropped: OnDropped): Tracing {
  const Exporter = config.protocol === 'http/json' ? JsonExporter : ProtobufExporter
  const exporter = new Exporter({ url: config.url, headers: config.headers, timeoutMillis: config.timeoutMs })
  const processor = createBoundedExport({
    exporter,
    maxSpans: config.maxQueueSize,
    onDropped,
    batch: (settling) => new BatchSpanProcessor(settling, {
      maxQueueSize: config.maxQueueSize,
      maxExportBatchSize: config.maxExportBatchSize,
      scheduledDelayMillis: config.scheduleDelayMs,
      exportTimeoutMillis: config.timeoutMs
    })
  })
  const version = portierVersion()
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.serviceName, 'service.version': version }),
    sampler: samplerOf(config.sampler, config.ratio),
    spanProcessors: [processor]
  })
  return {
    tracer: provider.getTracer('portier', version),
    extract: (headers) => propagator.extract(ROOT_CONTEXT, headers, headerGetter),
    headersOf: (span) => {
      const pairs: string[] = []
      propagator.inject(trace.setSpan(ROOT_CONTEXT, span), pairs, pairSetter)
      return pairs
    },
    // What cannot be sent in time is lost (and counted as export_failed): it never fails the service's close.
    shutdown: async () => { await provider.shutdown().catch(() => {}) }
  }
}
