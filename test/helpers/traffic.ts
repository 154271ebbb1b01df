import type { TrafficPolicy } from '../../common/traffic/policy.js'
import type { UpstreamsConfig } from '../../gateway/routing/index.js'
import { mockUpstreams } from './gateway.js'

/** What a test adds to the shipped upstreams: policies of the one upstream, and per route (`GET /users`) policies and cost. */
export interface TrafficDeclarations {
  upstream?: TrafficPolicy[]
  routes?: Record<string, { policies?: TrafficPolicy[], cost?: number }>
}

/** The shipped upstreams pointed at a test's upstream-mock, with traffic policies declared on them. */
export function upstreamsWithPolicies (mockUrl: string, declared: TrafficDeclarations): UpstreamsConfig {
  const { upstreams } = mockUpstreams(mockUrl)
  return {
    upstreams: upstreams.map((upstream, i) => ({
      ...upstream,
      ...(i === 0 && declared.upstream !== undefined ? { policies: declared.upstream } : {}),
      routes: upstream.routes.map((route) => ({ ...route, ...declared.routes?.[`${route.method} ${route.path}`] }))
    }))
  }
}

/** A rate policy, per key unless said otherwise. */
export const rate = (name: string, limit: number, windowSeconds: number, partition: TrafficPolicy['partition'] = 'key', extra: Partial<TrafficPolicy> = {}): TrafficPolicy =>
  ({ name, kind: 'rate', limit, window_seconds: windowSeconds, partition, ...extra }) as TrafficPolicy

/** The members of a structured-field list (`"a";q=1;w=2, "b";q=3`) as name → parameters. */
export function parseFieldList (value: string | undefined): Map<string, Record<string, number>> {
  const items = new Map<string, Record<string, number>>()
  if (value === undefined) return items
  for (const member of value.split(/\s*,\s*/)) {
    const [name, ...parameters] = member.split(';')
    const params: Record<string, number> = {}
    for (const parameter of parameters) {
      const [key, number] = parameter.split('=')
      params[key as string] = Number(number)
    }
    items.set(JSON.parse(name as string) as string, params)
  }
  return items
}
