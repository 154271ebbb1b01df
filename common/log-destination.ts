import { pino } from 'pino'
import { prettyLogDestination } from './pretty-log.js'

/** Log lines are held until this many bytes are waiting… */
const BATCH_BYTES = 4_096
/** …or this long has passed, so that a quiet service's lines are not held back. */
const FLUSH_INTERVAL_MS = 250

let stdout: pino.DestinationStream | null = null
let format: LogFormat = 'json'

export type LogFormat = 'json' | 'pretty'

/**
 * How this process writes its log lines to stdout (LOG_FORMAT): set by a service's entry
 * point once its configuration is read, before any logger is made. Every logger of the
 * process shares the one stdout destination, so the format is the process's.
 */
export function useLogFormat (chosen: LogFormat): void {
  if (stdout !== null && chosen !== format) throw new Error('the log format is chosen before the first logger is made')
  format = chosen
}

/**
 * stdout for every logger of this process, written in batches. One line per request
 * written on its own cost the gateway a system call per request (a seventh of its CPU
 * time per proxied request in the benchmark's profile); batched, lines reach stdout at
 * most FLUSH_INTERVAL_MS late, and pino writes what is left when the process exits.
 * Batches are written synchronously: an asynchronous write still in flight at exit
 * would land after the final flush, out of order. One shared destination keeps the
 * lines of several apps in one process in order.
 */
export function stdoutLogDestination (): pino.DestinationStream {
  // Written at once, unbatched: a person is watching, and the lines are few.
  if (stdout === null && format === 'pretty') stdout = prettyLogDestination()
  if (stdout === null) {
    const destination = pino.destination({ dest: 1, minLength: BATCH_BYTES, sync: true, periodicFlush: FLUSH_INTERVAL_MS })
    // pino writes out only asynchronous destinations at exit; this one holds a batch too.
    process.once('exit', () => { destination.flushSync() })
    stdout = destination
  }
  return stdout
}
