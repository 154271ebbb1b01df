/**
 * What a gateway's primary and its workers agree on. Orders travel over the cluster's
 * IPC channel, not as signals: a terminal's Ctrl-C or a hangup reaches the whole
 * process group, and a worker that saw both the signal and the primary's forwarded
 * copy would take the second as "stop at once" (close-with-grace's rule).
 */

/** Set by the primary in its workers' environment: a cluster worker without it belongs to another supervisor (pm2's cluster mode), and runs as one process. */
export const WORKER_MARKER = 'PORTIER_GATEWAY_WORKER'

export type PrimaryOrder =
  /** Read the upstreams file again (the primary got SIGHUP). */
  | { type: 'portier:reload-upstreams' }
  /** Drain and exit (the primary got SIGTERM or SIGINT). */
  | { type: 'portier:drain' }

export function isPrimaryOrder (message: unknown): message is PrimaryOrder {
  const type = (message as { type?: unknown } | null)?.type
  return type === 'portier:reload-upstreams' || type === 'portier:drain'
}
