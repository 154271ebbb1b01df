import { prettyFactory } from 'pino-pretty'

/** What a log destination must do for pino: take one serialised line at a time. */
export interface LineWriter { write: (line: string) => boolean }

/** The access line's fields (common/logger.ts) as a person reads them. */
interface AccessFields {
  method?: unknown
  url?: unknown
  status?: unknown
  duration_ms?: unknown
  route?: unknown
  upstream?: unknown
  principal?: { type?: unknown, id?: unknown }
  bytes_in?: unknown
  bytes_out?: unknown
  request_id?: unknown
  trace_id?: unknown
}

/** `GET /users/7 200 3.21 ms · backoffice /users/:id · api_key key_abc · 0 B in, 512 B out · req 9f…` */
export function accessSentence (line: AccessFields): string {
  const parts = [`${String(line.method)} ${String(line.url)} ${String(line.status)} ${String(line.duration_ms)} ms`]
  if (line.route !== null && line.route !== undefined) parts.push(line.upstream === null || line.upstream === undefined ? String(line.route) : `${String(line.upstream)} ${String(line.route)}`)
  const who = line.principal
  parts.push(who === undefined || who.id === null || who.id === undefined ? 'anonymous' : `${String(who.type)} ${String(who.id)}`)
  parts.push(`${String(line.bytes_in)} B in, ${String(line.bytes_out)} B out`)
  parts.push(`req ${String(line.request_id)}`)
  if (typeof line.trace_id === 'string') parts.push(`trace ${line.trace_id}`)
  return parts.join(' · ')
}

/**
 * Human-readable lines for a person at a terminal (LOG_FORMAT=pretty, npm start's
 * default), written to `out` as they come: pino-pretty's layout, each access line one
 * sentence instead of a dozen fields. Production logs stay JSON (the default).
 */
export function prettyLogDestination (out: NodeJS.WriteStream = process.stdout): LineWriter {
  const prettify = prettyFactory({ colorize: out.isTTY, ignore: 'pid,hostname', translateTime: 'SYS:HH:MM:ss.l', singleLine: true })
  return {
    write (line) {
      let entry: Record<string, unknown>
      try {
        entry = JSON.parse(line) as Record<string, unknown>
      } catch {
        return out.write(line)
      }
      const shown = entry.msg === 'request'
        ? { level: entry.level, time: entry.time, name: entry.name, msg: accessSentence(entry) }
        : entry
      return out.write(prettify(shown))
    }
  }
}
