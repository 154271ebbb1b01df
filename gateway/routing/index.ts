/**
 * Routing: the upstreams file (load and check), the route table built from it, and
 * the path normalisation that decides which path is authorised and forwarded.
 */
export { loadUpstreamsFile, parseUpstreams } from './load.js'
export { buildRouteTable } from './route-table.js'
export { MAX_PATH_LENGTH, normalisePath } from './normalise-path.js'
export { GATEWAY_OWN_PATHS, GATEWAY_OWN_PREFIXES, IDENTITY_ROUTES, RESERVED_PREFIXES } from './paths.js'
export { HTTP_METHODS, UpstreamsFileSchema } from './schema.js'
export type { ConfigFormat } from './parse-text.js'
export type {
  KeyCase, LoadedUpstreams, LoadOptions, NormalisedPath, ResolvedRoute, ResolvedUpstream, RouteMatch, RouteTable,
  RouteCors, RouteTableOptions, RouteTraffic, ScopedPolicy, UpstreamConfig, UpstreamCorsConfig, UpstreamRouteConfig, UpstreamsConfig, UpstreamTimeouts
} from './types.js'
