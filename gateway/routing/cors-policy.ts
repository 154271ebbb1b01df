import type { ResolvedRoute, RouteCors, RouteTraffic, UpstreamCorsConfig } from './types.js'

/** An upstream's cors block as answers: every field list built once, when the table is built, never per request. */
export interface CorsPolicy {
  answerFields: RouteCors['answerFields']
  preflightFields: RouteCors['preflightFields']
  methods: ReadonlySet<string>
}

/** A preflight takes one unit of the anonymous policies, whatever its route costs. */
const PREFLIGHT_TRAFFIC: RouteTraffic = Object.freeze({ policies: Object.freeze([]), cost: 1 })

/** What an answer says to a refused origin: nothing it may use, but that it varies by Origin, so a cache never hands it to an allowed one. */
const VARY_ORIGIN: readonly string[] = Object.freeze(['vary', 'origin'])

const fields = (...lists: Array<readonly string[]>): readonly string[] => Object.freeze(lists.flat())

/**
 * The field lists of an upstream's cors block. `*` (never with credentials: the loader
 * refuses that) answers every origin with `*`; a list echoes the origin that matched
 * exactly, with `Vary: Origin`, and gives a refused one no Access-Control-Allow-* field.
 */
export function corsPolicyOf (cors: UpstreamCorsConfig): CorsPolicy {
  const credentials = cors.credentials ? ['access-control-allow-credentials', 'true'] : []
  const expose = cors.expose_headers !== undefined && cors.expose_headers.length > 0 ? ['access-control-expose-headers', cors.expose_headers.join(', ')] : []
  const preflight = [
    'access-control-allow-methods', cors.methods.join(', '),
    // An empty list still answers the field: the browser then allows the safelisted headers alone.
    'access-control-allow-headers', cors.headers.join(', '),
    'access-control-max-age', String(cors.max_age)
  ]
  const methods: ReadonlySet<string> = new Set(cors.methods)
  if (cors.origins.includes('*')) {
    const answer = fields(['access-control-allow-origin', '*'], credentials, expose)
    const preflightAnswer = fields(['access-control-allow-origin', '*'], preflight, credentials)
    return { answerFields: () => answer, preflightFields: () => preflightAnswer, methods }
  }
  const answers = new Map(cors.origins.map((origin) => [origin, fields(['access-control-allow-origin', origin], VARY_ORIGIN, credentials, expose)]))
  const preflights = new Map(cors.origins.map((origin) => [origin, fields(['access-control-allow-origin', origin], VARY_ORIGIN, preflight, credentials)]))
  return {
    answerFields: (origin) => answers.get(origin) ?? VARY_ORIGIN,
    preflightFields: (origin) => preflights.get(origin) ?? null,
    methods
  }
}

/** One route's share of its upstream's policy: whether a preflight may ask for its method, and how traffic control counts one. */
export function routeCorsOf (policy: CorsPolicy, route: ResolvedRoute): RouteCors {
  return Object.freeze({
    answerFields: policy.answerFields,
    preflightFields: policy.preflightFields,
    methodAllowed: policy.methods.has(route.method),
    preflightRoute: Object.freeze({ ...route, auth: 'none' as const, traffic: PREFLIGHT_TRAFFIC })
  })
}
