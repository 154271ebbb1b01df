import type { Audit } from './audit.js'

/** How often a running identity prunes the audit trail (besides at start). */
export const AUDIT_PRUNE_INTERVAL_MS = 3_600_000

export interface AuditRetentionOptions {
  audit: Pick<Audit, 'prune'>
  /** config.auditRetentionDays; 0 keeps every record (nothing runs). */
  retentionDays: number
  log: { info: (fields: Record<string, unknown>, msg: string) => void, warn: (fields: Record<string, unknown>, msg: string) => void }
  intervalMs?: number
}

/**
 * Prunes records older than the retention at start and then hourly, on a timer that
 * never keeps the process alive. Only the server runs it: the CLI's commands are short.
 */
export function startAuditRetention (options: AuditRetentionOptions): { stop: () => void } {
  if (options.retentionDays <= 0) return { stop () {} }
  const prune = (): void => {
    try {
      const pruned = options.audit.prune(options.retentionDays)
      if (pruned !== null) {
        options.log.info({ deleted: pruned.deleted, throughSeq: pruned.through.seq }, 'pruned audit records older than the retention')
      }
    } catch (err) {
      // A busy database (the CLI writing) or a full disk: the next run tries again.
      options.log.warn({ err: { message: err instanceof Error ? err.message : String(err) } }, 'pruning the audit trail failed')
    }
  }
  prune()
  const timer = setInterval(prune, options.intervalMs ?? AUDIT_PRUNE_INTERVAL_MS)
  timer.unref()
  return { stop: () => { clearInterval(timer) } }
}
