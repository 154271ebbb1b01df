import { PassThrough } from 'node:stream'

export interface CapturedLogs {
  stream: PassThrough
  /** Every log line written so far, parsed. */
  lines: Array<Record<string, unknown>>
  /** The raw text, for "no secret appears anywhere" checks. */
  text: () => string
}

/** A pino destination that keeps what is written, for assertions on log lines. */
export function captureLogs (): CapturedLogs {
  const stream = new PassThrough()
  let text = ''
  const lines: Array<Record<string, unknown>> = []
  stream.on('data', (chunk: Buffer) => {
    text += chunk.toString()
    for (const line of chunk.toString().split('\n')) {
      if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>)
    }
  })
  return { stream, lines, text: () => text }
}
