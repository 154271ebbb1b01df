import { TraceFlags, type Context } from '@opentelemetry/api'
import { ExportResultCode, type ExportResult } from '@opentelemetry/core'
import type { ReadableSpan, Span, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base'

/** Why spans never reached the collector: no room left for them, or their export failed (refused, timed out, unreachable). */
export type DropReason = 'queue_full' | 'export_failed'

export type OnDropped = (spans: number, reason: DropReason) => void

/**
 * A bound on the spans held for export, counted exactly. The SDK's batch processor
 * drops at its own bound but keeps that count private, and forgets a batch once it
 * has handed it to the exporter; this counts every span from the moment it is handed
 * over until the exporter's answer about it, so that spans waiting and spans being
 * sent together never exceed `maxSpans`. The batch processor inside is given the same
 * bound and so never reaches its own: every drop happens, and is counted, here.
 */
export function createBoundedExport (options: {
  exporter: SpanExporter
  maxSpans: number
  onDropped: OnDropped
  /** The batch processor to feed, made around the exporter given to it. */
  batch: (exporter: SpanExporter) => SpanProcessor
}): SpanProcessor {
  const { maxSpans, onDropped } = options
  let held = 0

  const settling: SpanExporter = {
    export (spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
      let settled = false
      options.exporter.export(spans, (result) => {
        // An exporter answers once; a second answer must not count the batch twice.
        if (settled) return
        settled = true
        held -= spans.length
        if (result.code !== ExportResultCode.SUCCESS) onDropped(spans.length, 'export_failed')
        resultCallback(result)
      })
    },
    shutdown: async () => { await options.exporter.shutdown() },
    forceFlush: async () => { await options.exporter.forceFlush?.() }
  }
  const batch = options.batch(settling)

  return {
    onStart (span: Span, parentContext: Context): void {
      batch.onStart(span, parentContext)
    },
    onEnd (span: ReadableSpan): void {
      // What the batch processor would ignore is not held (nor counted as a drop).
      if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return
      if (held >= maxSpans) {
        onDropped(1, 'queue_full')
        return
      }
      held++
      batch.onEnd(span)
    },
    forceFlush: async () => { await batch.forceFlush() },
    shutdown: async () => { await batch.shutdown() }
  }
}
