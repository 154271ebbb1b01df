import { Type, type Static, type TObject } from 'typebox'

const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const
export type SamplerName = typeof SAMPLERS[number]

/** The OTLP/HTTP encodings spans can be sent in; gRPC is not offered (one transport, and no HTTP/2 client to carry). */
const PROTOCOLS = ['http/protobuf', 'http/json'] as const
export type OtlpProtocol = typeof PROTOCOLS[number]
const PROTOCOL_CHOICE = 'http/protobuf (binary, the specification\'s default) or http/json; grpc is not supported'

/**
 * The OpenTelemetry variables a traced service reads, by their standard names
 * (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/),
 * as one schema both services spread into their own: a bad one fails the start naming
 * it, through the service's ConfigError like any other variable.
 */
export function tracingEnvProperties (defaultServiceName: string) {
  return {
    OTEL_TRACES_EXPORTER: Type.Enum(['none', 'otlp'] as const, { default: 'none', description: 'Tracing: `otlp` sends spans over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT; `none`: no tracing at all (no SDK started, no span made).' }),
    OTEL_EXPORTER_OTLP_PROTOCOL: Type.Enum(PROTOCOLS, { default: 'http/protobuf', description: `How spans are encoded: ${PROTOCOL_CHOICE}.` }),
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: Type.Optional(Type.Enum(PROTOCOLS, { description: 'The encoding of spans, instead of OTEL_EXPORTER_OTLP_PROTOCOL.' })),
    OTEL_EXPORTER_OTLP_ENDPOINT: Type.String({ minLength: 1, default: 'http://localhost:4318', description: 'Base URL of the OTLP/HTTP collector; spans go to its `/v1/traces`.' }),
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: Type.Optional(Type.String({ minLength: 1, description: 'Full URL spans are posted to, instead of OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces`.' })),
    OTEL_EXPORTER_OTLP_TIMEOUT: Type.Integer({ minimum: 1, maximum: 60_000, default: 10_000, description: 'Longest wait in milliseconds for the collector to take one batch (retries included); the batch is dropped and counted after.' }),
    OTEL_EXPORTER_OTLP_HEADERS: Type.Optional(Type.String({ minLength: 1, description: 'Headers of every export request, `name=value` pairs separated by commas, values URL-encoded (e.g. a collector\'s credential); never logged.' })),
    OTEL_TRACES_SAMPLER: Type.Enum(SAMPLERS, { default: 'parentbased_always_on', description: 'Which requests are traced: `parentbased_traceidratio` (a caller\'s sampled decision is kept, others sampled at OTEL_TRACES_SAMPLER_ARG), `parentbased_always_on`, `parentbased_always_off`, `traceidratio`, `always_on`, `always_off`.' }),
    OTEL_TRACES_SAMPLER_ARG: Type.Number({ minimum: 0, maximum: 1, default: 1, description: 'The ratio of the `traceidratio` samplers, 0 to 1.' }),
    OTEL_SERVICE_NAME: Type.String({ minLength: 1, default: defaultServiceName, description: 'The `service.name` of every span.' }),
    OTEL_BSP_MAX_QUEUE_SIZE: Type.Integer({ minimum: 1, default: 2048, description: 'Most spans waiting for, or in, an export; more are dropped and counted (tracing_spans_dropped_total, reason queue_full).' }),
    OTEL_BSP_SCHEDULE_DELAY: Type.Integer({ minimum: 0, default: 5000, description: 'Milliseconds between two exports of waiting spans.' }),
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: Type.Integer({ minimum: 1, default: 512, description: 'Most spans in one export request; at most OTEL_BSP_MAX_QUEUE_SIZE.' })
  }
}

type TracingEnv = Static<TObject<ReturnType<typeof tracingEnvProperties>>>

/** What a service's tracing is started from, once its variables are read and checked. */
export interface TracingConfig {
  serviceName: string
  /** Where spans are posted (the OTLP/HTTP traces URL). */
  url: string
  protocol: OtlpProtocol
  headers: Record<string, string>
  timeoutMs: number
  sampler: SamplerName
  ratio: number
  maxQueueSize: number
  scheduleDelayMs: number
  maxExportBatchSize: number
}

/** OTEL_EXPORTER_OTLP_HEADERS as the specification spells it (W3C Baggage's list: `k=v,k2=v2`, values URL-encoded), or null when it does not parse. */
function parseHeaders (value: string): Record<string, string> | null {
  const headers: Record<string, string> = {}
  for (const entry of value.split(',')) {
    if (entry.trim() === '') continue
    const at = entry.indexOf('=')
    if (at <= 0) return null
    const name = entry.slice(0, at).trim().toLowerCase()
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name)) return null
    try {
      headers[name] = decodeURIComponent(entry.slice(at + 1).trim())
    } catch {
      return null
    }
  }
  return headers
}

/** An http(s) URL, or the problem with it; the value is never shown (a URL may carry a credential). */
function httpUrlProblem (name: string, value: string): string | null {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return `${name}: must be an http:// or https:// URL`
  }
  return url.protocol === 'http:' || url.protocol === 'https:' ? null : `${name}: must be an http:// or https:// URL`
}

/**
 * The tracing configuration from validated variables: null when OTEL_TRACES_EXPORTER
 * is `none` (tracing off), else the settings, or the problems found with them (each
 * naming its variable). The endpoint and headers are checked even when tracing is off,
 * so that turning it on later cannot reveal a mistake made now.
 */
export function tracingConfigOf (e: TracingEnv): { config: TracingConfig | null, problems: string[] } {
  const problems: string[] = []
  const endpointProblem = httpUrlProblem('OTEL_EXPORTER_OTLP_ENDPOINT', e.OTEL_EXPORTER_OTLP_ENDPOINT)
  if (endpointProblem !== null) problems.push(endpointProblem)
  const tracesProblem = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT === undefined ? null : httpUrlProblem('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
  if (tracesProblem !== null) problems.push(tracesProblem)
  const headers = e.OTEL_EXPORTER_OTLP_HEADERS === undefined ? {} : parseHeaders(e.OTEL_EXPORTER_OTLP_HEADERS)
  if (headers === null) problems.push('OTEL_EXPORTER_OTLP_HEADERS: must be name=value pairs separated by commas, values URL-encoded')
  if (e.OTEL_BSP_MAX_EXPORT_BATCH_SIZE > e.OTEL_BSP_MAX_QUEUE_SIZE) {
    problems.push(`OTEL_BSP_MAX_EXPORT_BATCH_SIZE: must be at most OTEL_BSP_MAX_QUEUE_SIZE (${e.OTEL_BSP_MAX_QUEUE_SIZE})`)
  }
  if (problems.length > 0 || headers === null || e.OTEL_TRACES_EXPORTER === 'none') return { config: null, problems }
  return {
    config: {
      serviceName: e.OTEL_SERVICE_NAME,
      // The signal-specific URL is used as given; the base one gets the signal's path (the specification's rule).
      url: e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? `${e.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`,
      protocol: e.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? e.OTEL_EXPORTER_OTLP_PROTOCOL,
      headers,
      timeoutMs: e.OTEL_EXPORTER_OTLP_TIMEOUT,
      sampler: e.OTEL_TRACES_SAMPLER,
      ratio: e.OTEL_TRACES_SAMPLER_ARG,
      maxQueueSize: e.OTEL_BSP_MAX_QUEUE_SIZE,
      scheduleDelayMs: e.OTEL_BSP_SCHEDULE_DELAY,
      maxExportBatchSize: e.OTEL_BSP_MAX_EXPORT_BATCH_SIZE
    },
    problems
  }
}
