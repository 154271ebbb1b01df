import t from 'tap'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { TracingConfig } from '../../common/tracing/config.js'
import { SpanKind, SpanStatusCode, trace, ROOT_CONTEXT } from '@opentelemetry/api'
import { startTracing, type DropReason } from '../../common/tracing/tracing.js'
import { startOtlpReceiver } from '../helpers/otlp-receiver.js'

/**
 * The export queue: bounded, every drop counted exactly and by reason, a collector that
 * never answers costs nothing but the spans, and closing sends what is held.
 */

const config = (url: string, settings: Partial<TracingConfig> = {}): TracingConfig => ({
  serviceName: 'export-test',
  url: `${url}/v1/traces`,
  protocol: 'http/protobuf',
  headers: {},
  timeoutMs: 10_000,
  sampler: 'always_on',
  ratio: 1,
  maxQueueSize: 2048,
  scheduleDelayMs: 10,
  maxExportBatchSize: 512,
  ...settings
})

function dropCounter (): { counts: Record<DropReason, number>, onDropped: (spans: number, reason: DropReason) => void } {
  const counts: Record<DropReason, number> = { queue_full: 0, export_failed: 0 }
  return { counts, onDropped: (spans, reason) => { counts[reason] += spans } }
}

t.test('a black-holed collector: spans beyond the queue are dropped and counted exactly, at once', async (t) => {
  const blackHole = await startOtlpReceiver(t, 'black_hole')
  const drops = dropCounter()
  const tracing = startTracing(config(blackHole.url, { maxQueueSize: 5, maxExportBatchSize: 2 }), drops.onDropped)
  const startedAt = performance.now()
  for (let i = 0; i < 12; i++) tracing.tracer.startSpan(`span ${i}`).end()
  t.ok(performance.now() - startedAt < 100, 'ending spans never waits for the collector')
  t.equal(drops.counts.queue_full, 7, '12 spans, 5 held: 7 dropped')
  // While the first exports hang, still nothing more fits.
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.ok(blackHole.requests() > 0, 'exports were attempted')
  tracing.tracer.startSpan('later').end()
  t.equal(drops.counts.queue_full, 8, 'a span sent while the exports hang is dropped too')
  blackHole.release()
  await tracing.shutdown()
  t.equal(drops.counts.export_failed, 0, 'the held spans went once the collector answered')
})

t.test('spans the collector refuses are counted as export_failed; room comes back after', async (t) => {
  const server = createServer((request, response) => { request.resume().on('end', () => response.writeHead(400).end()) })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { server.close() })
  const drops = dropCounter()
  const tracing = startTracing(config(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { maxQueueSize: 4, maxExportBatchSize: 4 }), drops.onDropped)
  for (let i = 0; i < 4; i++) tracing.tracer.startSpan(`span ${i}`).end()
  await tracing.shutdown()
  t.same(drops.counts, { queue_full: 0, export_failed: 4 }, 'the refused batch, counted once')
})

t.test('closing sends what is held; unsampled spans are never held', async (t) => {
  const receiver = await startOtlpReceiver(t)
  const drops = dropCounter()
  const tracing = startTracing(config(receiver.url, { scheduleDelayMs: 60_000, maxQueueSize: 3 }), drops.onDropped)
  for (let i = 0; i < 3; i++) tracing.tracer.startSpan(`span ${i}`).end()
  await tracing.shutdown()
  t.equal(receiver.spans.length, 3, 'every held span sent on close, long before the schedule')
  t.same(drops.counts, { queue_full: 0, export_failed: 0 }, 'nothing dropped')

  const off = startTracing(config(receiver.url, { sampler: 'always_off', maxQueueSize: 1 }), drops.onDropped)
  for (let i = 0; i < 5; i++) off.tracer.startSpan(`unsampled ${i}`).end()
  await off.shutdown()
  t.same(drops.counts, { queue_full: 0, export_failed: 0 }, 'unsampled spans take no room and are no drop')
  t.equal(receiver.spans.length, 3, 'and are never sent')
})

t.test('protobuf and JSON carry the same spans', async (t) => {
  const receiver = await startOtlpReceiver(t)
  for (const protocol of ['http/protobuf', 'http/json'] as const) {
    const tracing = startTracing(config(receiver.url, { protocol }), dropCounter().onDropped)
    const parent = tracing.tracer.startSpan('parent', { kind: SpanKind.SERVER })
    const child = tracing.tracer.startSpan(`child over ${protocol}`, {
      kind: SpanKind.CLIENT,
      attributes: { text: 'é, 世界', count: 1234567890123, ratio: 0.25, yes: true, no: false }
    }, trace.setSpan(ROOT_CONTEXT, parent))
    child.setStatus({ code: SpanStatusCode.ERROR })
    child.end()
    parent.end()
    await tracing.shutdown()
    const received = receiver.spans.find((span) => span.name === `child over ${protocol}`)
    const { traceId, spanId } = parent.spanContext()
    t.same(received, {
      service: 'export-test',
      name: `child over ${protocol}`,
      kind: 3,
      traceId,
      spanId: child.spanContext().spanId,
      parentSpanId: spanId,
      attributes: { text: 'é, 世界', count: 1234567890123, ratio: 0.25, yes: true, no: false },
      status: 2
    }, `${protocol}: ids, parent, kind, every attribute type and the status, as sent`)
  }
  t.same(receiver.contentTypes, ['application/x-protobuf', 'application/json'], 'each in its own encoding, protobuf first')
})
