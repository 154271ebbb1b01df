import type { FastifyBaseLogger } from 'fastify'
import { pino } from 'pino'
import type { KeyCacheL2, VerifiedKey } from '../../gateway/auth/key-cache-l2.js'

/**
 * What the unit suites of the gateway's auth caches share: a clock moved by hand, a
 * silent logger, promises settled by the test, and an L2 held in memory. No sockets.
 */

export const START = Date.parse('2026-01-01T00:00:00Z')

export interface Clock { now: () => number, advance: (ms: number) => void }

export function fakeClock (start = START): Clock {
  let now = start
  return { now: () => now, advance: (ms) => { now += ms } }
}

export const silentLog = pino({ level: 'silent' }) as unknown as FastifyBaseLogger

export interface Deferred<T> { promise: Promise<T>, resolve: (value: T) => void, reject: (err: Error) => void }

export function deferred<T = void> (): Deferred<T> {
  let settle: Omit<Deferred<T>, 'promise'> = { resolve: () => {}, reject: () => {} }
  const promise = new Promise<T>((resolve, reject) => { settle = { resolve, reject } })
  return { promise, resolve: (value) => { settle.resolve(value) }, reject: (err) => { settle.reject(err) } }
}

/** Lets every pending promise continuation run (the verifier's awaits between its steps). */
export async function settle (): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve))
}

export const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

export interface MemoryL2 extends KeyCacheL2 {
  entries: Map<string, VerifiedKey>
  calls: { read: number, write: number, evict: number }
}

/**
 * L2 as Redis holds it, in memory: entries under their cache key until their `until`,
 * found by key id on eviction, and a write that an eviction heard meanwhile undoes
 * (as the Redis one does when `stillCurrent` turns false after its SET).
 */
export function memoryL2 (now: () => number): MemoryL2 {
  const entries = new Map<string, VerifiedKey>()
  const calls = { read: 0, write: 0, evict: 0 }
  return {
    entries,
    calls,
    async read (cacheKey) {
      calls.read++
      const entry = entries.get(cacheKey)
      return entry !== undefined && entry.until > now() ? entry : null
    },
    async write (cacheKey, key, stillCurrent) {
      calls.write++
      if (key.until <= now()) return
      entries.set(cacheKey, key)
      if (!stillCurrent()) entries.delete(cacheKey)
    },
    async evict (keyId, written) {
      calls.evict++
      for (const [cacheKey, entry] of entries) if (entry.id === keyId || written.includes(cacheKey)) entries.delete(cacheKey)
    },
    setAside () { entries.clear() },
    inUse: true,
    close () {}
  }
}
