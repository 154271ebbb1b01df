import { GatewayProblems } from '../errors.js'
import type { ResolvedUpstream } from '../routing/index.js'

/**
 * A fair share of each upstream's connections: no principal (a key, a user for tokens,
 * a client network on identity's anonymous routes) holds more than `fairShare` of the
 * upstream's pool in flight at once (half by default; 1 turns it off). An upstream's
 * pool is shared first come, first served, so without this one client holding slow
 * requests would queue every other client's behind its own. Past its share a request is
 * refused at once, `429 concurrency_limited` with `Retry-After: 1`, instead of being
 * queued. A place is taken when the request is about to be sent upstream (a body still
 * arriving holds no connection) and given back when the upstream's answer is over.
 * Counted per gateway process, as the pools are, and per pool: by origin, so upstreams
 * that share an origin (and so a pool) share the count; a reload keeps the counts of
 * requests in flight.
 */
/** How a refusal names the share, among the policies it lists. */
export const FAIR_SHARE_POLICY = 'fair-share'

export function createFairShare () {
  const inFlight = new Map<string, Map<string, number>>()

  /** How many requests one principal may have in flight to `upstream`; Infinity when the share is off. */
  function shareOf (upstream: ResolvedUpstream): number {
    if (upstream.fairShare >= 1) return Number.POSITIVE_INFINITY
    return Math.max(1, Math.floor(upstream.connections * upstream.fairShare))
  }

  return {
    /**
     * Takes one of `principal`'s places on `upstream`, or throws the 429. The returned
     * function gives it back (once, however often it is called); null when the share is off.
     */
    take (upstream: ResolvedUpstream, principal: string): (() => void) | null {
      const share = shareOf(upstream)
      if (share === Number.POSITIVE_INFINITY) return null
      let counts = inFlight.get(upstream.origin)
      if (counts === undefined) inFlight.set(upstream.origin, counts = new Map())
      const held = counts.get(principal) ?? 0
      if (held >= share) {
        throw GatewayProblems.concurrencyLimited([FAIR_SHARE_POLICY], {
          headers: { 'retry-after': '1' },
          extensions: { retry_after: 1, policies: [{ name: FAIR_SHARE_POLICY, kind: 'concurrency', limit: share, upstream: upstream.name, retry_after: 1 }] }
        })
      }
      counts.set(principal, held + 1)
      const ofUpstream = counts
      let released = false
      return () => {
        if (released) return
        released = true
        const left = (ofUpstream.get(principal) ?? 1) - 1
        if (left <= 0) ofUpstream.delete(principal)
        else ofUpstream.set(principal, left)
      }
    },

    /** Requests `principal` has in flight to the pool of `origin`. */
    held (origin: string, principal: string): number {
      return inFlight.get(origin)?.get(principal) ?? 0
    }
  }
}

export type FairShare = ReturnType<typeof createFairShare>
