import { alternate, type VariantSpec } from '../rounds.js'
import type { ScenarioResult } from '../report/types.js'
import { BENCH_PATH } from '../upstreams.js'
import { judge, login, type BenchContext } from './context.js'

/**
 * GET /users (a 50-user page) straight to the mock, through the bare proxy, nginx,
 * and the gateway with an API key, a Bearer token and camel inflection: one rotation,
 * so that the three gateway scenarios share the same bare-proxy rounds.
 */
export async function proxyOverhead (ctx: BenchContext): Promise<ScenarioResult[]> {
  const { stack, connections } = ctx
  const { nginx } = stack
  const get = (base: string, headers: Record<string, string> = {}) => ({ url: base + BENCH_PATH, method: 'GET' as const, headers, connections, durationSeconds: 0 })
  const bearer = async (): Promise<Record<string, string>> => ({ authorization: `Bearer ${(await login(stack)).access_token}` })
  const specs: VariantSpec[] = [
    { id: 'direct', label: 'direct to upstream', role: 'reference', job: () => get(stack.mock.url) },
    { id: 'bare', label: 'bare proxy (Fastify + @fastify/http-proxy)', role: 'baseline', pid: stack.bare.pid, job: () => get(stack.bare.url) },
    ...(nginx !== null ? [{ id: 'nginx', label: `${stack.nginxVersion ?? 'nginx'} proxy_pass`, role: 'reference' as const, job: () => get(nginx.url) }] : []),
    { id: 'gateway-key', label: 'gateway, API key', role: 'candidate', pid: stack.gateway.pid, job: () => get(stack.gateway.url, { 'x-api-key': stack.accounts.apiKey }) },
    { id: 'gateway-bearer', label: 'gateway, Bearer JWT', role: 'candidate', pid: stack.gateway.pid, job: async () => get(stack.gateway.url, await bearer()) },
    { id: 'gateway-camel', label: 'gateway, API key + camel inflection', role: 'candidate', pid: stack.gateway.pid, job: () => get(stack.gateway.url, { 'x-api-key': stack.accounts.apiKey, 'x-api-inflection': 'camel' }) }
  ]
  ctx.say(`GET ${BENCH_PATH} (50 users): ${specs.map((s) => s.id).join(', ')}`)
  const variants = await alternate(ctx.driver, specs, ctx.rounds)
  const pick = (...ids: string[]) => variants.filter((v) => ids.includes(v.id))
  const request = `GET ${BENCH_PATH} (50-user page, ~10 KB), ${connections} connections`
  return [
    judge({
      id: 'api-key',
      title: 'GET /users, API key, warm cache',
      request,
      variants: pick('direct', 'bare', 'nginx', 'gateway-key'),
      candidate: 'gateway-key',
      target: { description: '≥ 0.90 × bare proxy; p99 ≤ bare p99 + 1 ms', against: 'bare', minThroughputRatio: 0.9, maxP99ExcessMs: 1 }
    }),
    judge({
      id: 'bearer',
      title: 'GET /users, Bearer JWT',
      request,
      variants: pick('bare', 'gateway-bearer'),
      candidate: 'gateway-bearer',
      target: { description: '≥ 0.85 × bare proxy', against: 'bare', minThroughputRatio: 0.85 }
    }),
    judge({
      id: 'camel',
      title: 'GET /users, camel inflection, 50 users',
      request,
      variants: pick('bare', 'gateway-camel'),
      candidate: 'gateway-camel',
      target: { description: '≥ 0.75 × bare proxy', against: 'bare', minThroughputRatio: 0.75 }
    })
  ]
}
