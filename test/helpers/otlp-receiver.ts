import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { decodeProtobufExport } from './otlp-protobuf.js'
import type { Teardown } from './temp.js'

/** One span as the receiver decoded it from an OTLP/HTTP export (protobuf or JSON). */
export interface ReceivedSpan {
  service: string
  name: string
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number
  traceId: string
  spanId: string
  parentSpanId: string
  attributes: Record<string, string | number | boolean>
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: number
}

export const SPAN_KIND = { internal: 1, server: 2, client: 3 } as const

/** How the receiver treats an export: take it (200), or hold it unanswered, as a black-holed collector does. */
export type ReceiverMode = 'accept' | 'black_hole'

export interface OtlpReceiver {
  /** Base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it (spans come to /v1/traces). */
  url: string
  spans: ReceivedSpan[]
  /** Export requests received, answered or not. */
  requests: () => number
  /** The Content-Type of each export request taken, in order: which encoding the exporter sent. */
  contentTypes: string[]
  /** The spans of `service` once `count` of them have come (fails the wait after `timeoutMs`). */
  waitFor: (service: string, count: number, timeoutMs?: number) => Promise<ReceivedSpan[]>
  /** Answers every held export (200), and every one after, so that a closing exporter is not kept waiting. */
  release: () => void
}

interface AnyValue { stringValue?: string, intValue?: string | number, boolValue?: boolean, doubleValue?: number }
interface KeyValue { key: string, value: AnyValue }
interface ExportRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: KeyValue[] }
    scopeSpans?: Array<{ spans?: Array<{ name: string, kind: number, traceId: string, spanId: string, parentSpanId?: string, attributes?: KeyValue[], status?: { code?: number } }> }>
  }>
}

function valueOf (value: AnyValue): string | number | boolean {
  if (value.stringValue !== undefined) return value.stringValue
  if (value.intValue !== undefined) return Number(value.intValue)
  if (value.boolValue !== undefined) return value.boolValue
  return value.doubleValue ?? ''
}

const attributesOf = (list: KeyValue[] = []): Record<string, string | number | boolean> =>
  Object.fromEntries(list.map(({ key, value }) => [key, valueOf(value)]))

/** Spans of an export request in OTLP's JSON shape (ids hex), whichever encoding it came in. */
function decode (body: ExportRequest): ReceivedSpan[] {
  const spans: ReceivedSpan[] = []
  for (const resourceSpans of body.resourceSpans ?? []) {
    const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name'])
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        spans.push({
          service,
          name: span.name,
          kind: span.kind,
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId ?? '',
          attributes: attributesOf(span.attributes),
          status: span.status?.code ?? 0
        })
      }
    }
  }
  return spans
}

/** A tiny OTLP/HTTP collector on loopback: what the services export, decoded, for a test to read. */
export async function startOtlpReceiver (t: Teardown, mode: ReceiverMode = 'accept'): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = []
  const held: ServerResponse[] = []
  const contentTypes: string[] = []
  let requests = 0
  let holding = mode === 'black_hole'
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    requests++
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      if (holding) {
        held.push(response)
        return
      }
      const contentType = request.headers['content-type'] ?? ''
      const body = Buffer.concat(chunks)
      contentTypes.push(contentType)
      spans.push(...decode(contentType === 'application/x-protobuf' ? decodeProtobufExport(body) : JSON.parse(body.toString('utf8')) as ExportRequest))
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const release = (): void => {
    holding = false
    for (const response of held.splice(0)) response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
  }
  t.teardown(async () => {
    release()
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    requests: () => requests,
    contentTypes,
    release,
    waitFor: async (service, count, timeoutMs = 5_000) => {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const found = spans.filter((span) => span.service === service)
        if (found.length >= count) return found
        if (Date.now() > deadline) throw new Error(`${found.length} of ${count} spans of ${service} received`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    }
  }
}
