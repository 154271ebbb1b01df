import type { RouteTable } from '../routing/index.js'

export type RedisState = 'up' | 'down' | 'not_configured'

export interface Readiness {
  ready: boolean
  status: 'ready' | 'degraded' | 'not_ready'
  checks: {
    config: { routes: number, upstreams: number }
    redis: RedisState
    identity: 'up' | 'down'
    jwks: 'loaded' | 'not_loaded'
  }
}

export interface ReadinessSources {
  table: () => RouteTable
  identityUp: () => Promise<boolean>
  jwksLoaded: () => boolean
  redis: () => Promise<RedisState>
}

/**
 * What /readyz reports. Ready means the gateway can verify tokens (it holds identity's
 * signing keys); Redis or identity down is "degraded": the degraded modes still serve.
 */
export function createReadiness (sources: ReadinessSources): () => Promise<Readiness> {
  return async function readiness () {
    const identityUp = await sources.identityUp()
    const redis = await sources.redis()
    const loaded = sources.jwksLoaded()
    const table = sources.table()
    const degraded = !identityUp || redis === 'down'
    return {
      ready: loaded,
      status: !loaded ? 'not_ready' : degraded ? 'degraded' : 'ready',
      checks: {
        config: { routes: table.routeCount, upstreams: table.upstreams.length },
        redis,
        identity: identityUp ? 'up' : 'down',
        jwks: loaded ? 'loaded' : 'not_loaded'
      }
    }
  }
}
