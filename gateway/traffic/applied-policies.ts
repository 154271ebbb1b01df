import { isIP } from 'node:net'
import { clientNetwork } from '../../common/client-network.js'
import { quotaPeriodAt } from '../../common/traffic/quota-period.js'
import type { CounterCheck } from '../../common/traffic/counter.js'
import type { ConcurrencyPolicy, Partition, TrafficPolicy } from '../../common/traffic/policy.js'
import type { Principal } from '../auth/authenticate.js'
import type { ResolvedRoute, ScopedPolicy } from '../routing/index.js'

/** Who and what one request is, as the partitions of its policies read it. */
export interface RequestParty {
  route: ResolvedRoute
  principal: Principal | null
  ip: string
}

/**
 * A client's network as a partition: an address a trusted proxy forwarded that is not
 * an IP address at all counts with every other such one, so junk in X-Forwarded-For
 * neither escapes the per-IP counts nor reaches Redis or identity as a name.
 */
// Node leaves a socket's address undefined once the client is gone: typed a string, checked as what it is.
const networkOf = (ip: string | undefined): string =>
  `ip:${typeof ip === 'string' && isIP(ip.replace(/%.*$/, '')) !== 0 ? clientNetwork(ip) : 'not-an-address'}`

/**
 * The name of the partition a request falls in. Names carry their kind (`k:`, `u:`,
 * `ip:`, `r:`, `up:`) so two kinds never share a count. A per-key or per-user policy
 * on a request without a credential counts per client network; a per-user policy on
 * a key that belongs to no user counts per key.
 */
export function partitionOf (partition: Partition, party: RequestParty): string {
  const { principal, route } = party
  switch (partition) {
    case 'key':
      if (principal === null) return networkOf(party.ip)
      return principal.kind === 'key' ? `k:${principal.id}` : `u:${principal.id}`
    case 'user':
      if (principal === null) return networkOf(party.ip)
      return principal.user !== null ? `u:${principal.user}` : `k:${principal.id}`
    case 'ip': return networkOf(party.ip)
    case 'route': return `r:${route.method}:${route.pattern}`
    case 'upstream': return `up:${route.upstream.name}`
  }
}

/** Partitions every caller shares: taken only once the caller's own counts let the request through. */
const isSharedPartition = (partition: Partition): boolean => partition === 'route' || partition === 'upstream'

/** Policies that came with a credential (`key`, `role:<name>`), not with a route, an upstream or the anonymous defaults. */
const isCredentialScope = (scope: string): boolean => scope === 'key' || scope.startsWith('role:')

/**
 * A policy that came with a credential limits that credential's traffic alone: per
 * route, upstream or IP means per route (upstream, IP) of that key, or of that user
 * for a role's policy. Other callers never share its count.
 */
function credentialPartitionOf (policy: TrafficPolicy, scope: string, party: RequestParty): string {
  const partition = partitionOf(policy.partition, party)
  if (policy.partition === 'key' || policy.partition === 'user') return partition
  return `${partitionOf(scope === 'key' ? 'key' : 'user', party)}|${partition}`
}

/** What a request must pass, split by kind and by whose count it is. */
export interface AppliedPolicies {
  /** The caller's own counts (key, user, IP), then the shared ones (route, upstream). */
  own: CounterCheck[]
  shared: CounterCheck[]
  concurrency: Array<{ id: string, scope: string, policy: ConcurrencyPolicy }>
}

/** The count a policy keeps for one partition; a rate's limit and window are part of it, so a changed policy starts a new one. */
function counterId (scope: string, policy: TrafficPolicy, partition: string): string {
  switch (policy.kind) {
    case 'rate': return `${scope}|${policy.name}|${policy.limit}/${policy.window_seconds}s|${partition}`
    // A quota keeps its count when its limit changes: raising a monthly quota must not hand out a fresh month.
    case 'quota': return `${scope}|${policy.name}|${policy.period}|${partition}`
    case 'concurrency': return `${scope}|${policy.name}|${policy.limit}|${partition}`
  }
}

/** The checks of `policies` for one request, costing `cost` units at `now`. */
export function applyPolicies (policies: readonly ScopedPolicy[], party: RequestParty, cost: number, now: number): AppliedPolicies {
  const applied: AppliedPolicies = { own: [], shared: [], concurrency: [] }
  for (const { scope, policy } of policies) {
    const credential = isCredentialScope(scope)
    const partition = credential ? credentialPartitionOf(policy, scope, party) : partitionOf(policy.partition, party)
    const id = counterId(scope, policy, partition)
    if (policy.kind === 'concurrency') {
      applied.concurrency.push({ id, scope, policy })
      continue
    }
    const period = policy.kind === 'quota' ? quotaPeriodAt(policy.period, now) : { start: 0, end: 0 }
    const check: CounterCheck = { id, scope, tag: partition, policy, cost, periodStart: period.start, periodEnd: period.end, seed: undefined }
    ;(!credential && isSharedPartition(policy.partition) ? applied.shared : applied.own).push(check)
  }
  return applied
}
