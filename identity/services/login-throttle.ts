import { LRUCache } from 'lru-cache'
import type { Clock } from './clock.js'

/** Upper bound on tracked e-mails and IPs: a flood of distinct ones cannot grow memory. */
const MAX_TRACKED = 100_000

export interface LoginThrottleOptions {
  enabled: boolean
  maxFailuresPerEmail: number
  maxFailuresPerIp: number
  windowSeconds: number
  clock: Clock
}

interface Window { failures: number, resetAt: number }

export type LoginThrottle = ReturnType<typeof createLoginThrottle>

/**
 * Counts failed logins per e-mail and per client IP in fixed windows. Once either
 * count reaches its limit, further attempts are refused (before any password work)
 * until the window ends. State is per identity process: identity is a single writer.
 */
export function createLoginThrottle (options: LoginThrottleOptions) {
  const { clock } = options
  const windows = new LRUCache<string, Window>({ max: MAX_TRACKED })
  const windowMs = options.windowSeconds * 1000

  function current (key: string): Window | undefined {
    const window = windows.get(key)
    if (window !== undefined && window.resetAt <= clock.now()) {
      windows.delete(key)
      return undefined
    }
    return window
  }

  function blockedFor (key: string, limit: number): number {
    const window = current(key)
    if (window === undefined || window.failures < limit) return 0
    return Math.ceil((window.resetAt - clock.now()) / 1000)
  }

  function bump (key: string): void {
    const window = current(key)
    if (window === undefined) windows.set(key, { failures: 1, resetAt: clock.now() + windowMs })
    else window.failures++
  }

  return {
    /** Seconds the caller must wait, or 0 if it may try. */
    retryAfterSeconds (email: string, ip: string): number {
      if (!options.enabled) return 0
      return Math.max(blockedFor(`email:${email}`, options.maxFailuresPerEmail), blockedFor(`ip:${ip}`, options.maxFailuresPerIp))
    },
    recordFailure (email: string, ip: string): void {
      if (!options.enabled) return
      bump(`email:${email}`)
      bump(`ip:${ip}`)
    },
    /** A successful login clears the e-mail's count (not the IP's: one IP may try many accounts). */
    recordSuccess (email: string): void {
      windows.delete(`email:${email}`)
    }
  }
}
