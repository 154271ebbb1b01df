import { alternate } from '../rounds.js'
import type { IdentityRates } from '../report/types.js'
import type { TokenSet } from '../load/job.js'
import { login, loginBody, type BenchContext } from './context.js'

/**
 * Logins (`POST /sessions`: one argon2id verification each) against refreshes
 * (`POST /tokens`: a token rotation and a signature, no argon2), both through the
 * gateway as clients send them. Every refresh connection follows its own chain. Both
 * run on autocannon, the generator that can follow refresh chains, and on fewer
 * connections than the proxy scenarios: each refresh round starts with a login per
 * connection, and argon2 makes those slow.
 */
const IDENTITY_CONNECTIONS = 10

export async function identityRates (ctx: BenchContext): Promise<IdentityRates> {
  const { stack } = ctx
  const connections = Math.min(ctx.connections, IDENTITY_CONNECTIONS)
  const body = loginBody(stack)
  const chains = async (): Promise<TokenSet[]> => await Promise.all(Array.from({ length: connections }, async () => await login(stack)))
  ctx.say('logins (POST /sessions) vs refreshes (POST /tokens)')
  const variants = await alternate(ctx.driver, [
    { id: 'login', label: 'POST /sessions', role: 'baseline', job: () => ({ url: `${stack.gateway.url}/sessions`, method: 'POST' as const, headers: { 'content-type': 'application/json' }, body, connections, durationSeconds: 0, autocannonOnly: true }) },
    { id: 'refresh', label: 'POST /tokens', role: 'candidate', job: async () => ({ url: `${stack.gateway.url}/tokens`, method: 'POST' as const, headers: { 'content-type': 'application/json' }, connections, durationSeconds: 0, refreshTokens: await chains() }) }
  ], ctx.rounds)
  const [logins, refreshes] = variants.map((v) => v.median.requestsPerSecond) as [number, number]
  const { memoryCost, timeCost, parallelism } = stack.settings.argon2
  return {
    loginsPerSecond: logins,
    refreshesPerSecond: refreshes,
    ratio: refreshes / logins,
    argon2: { memoryKiB: memoryCost, timeCost, parallelism },
    met: refreshes / logins >= 20
  }
}
