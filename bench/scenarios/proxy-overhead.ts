import { alternate, withFloorRatios, type VariantSpec } from '../rounds.js'
import type { ScenarioResult } from '../report/types.js'
import { formatRatio } from '../report/format.js'
import { BARE_ID, DIRECT_ID, FLOOR_ID, judge, login, type BenchContext } from './context.js'
import { KEY_TARGET, camelTarget, floorVariant, gatewayCamelVariant, gatewayKeyVariant, headroomVariants, staticGet } from './static-variants.js'

/** Not targets: where the API key run should end up, written beside its figures. */
const MOONSHOT = { floor: 0.75, bare: 1 }

/**
 * GET /users (a 50-user page of 7 KB) from the static upstream: direct, through the
 * node floor, the bare proxy, nginx, and the gateway with an API key, a Bearer token
 * and camel inflection, in one rotation, so that every scenario of the three shares
 * the same reference rounds.
 */
export async function proxyOverhead (ctx: BenchContext): Promise<ScenarioResult[]> {
  const { stack, connections } = ctx
  const { nginx } = stack
  const bearer = async (): Promise<Record<string, string>> => ({ authorization: `Bearer ${(await login(stack)).access_token}` })
  const specs: VariantSpec[] = [
    ...headroomVariants(ctx, '7k'),
    floorVariant(ctx, '7k'),
    ...(nginx !== null ? [{ id: 'nginx', label: `${stack.nginxVersion ?? 'nginx'} proxy_pass`, role: 'reference' as const, pid: nginx.pid, job: () => staticGet(ctx, nginx.url, '7k') }] : []),
    gatewayKeyVariant(ctx, stack.gateway, '7k', 'gateway-key', 'gateway, API key'),
    { id: 'gateway-bearer', label: 'gateway, Bearer JWT', role: 'candidate', pid: stack.gateway.pid, job: async () => staticGet(ctx, stack.gateway.url, '7k', await bearer()) },
    gatewayCamelVariant(ctx, '7k')
  ]
  ctx.say(`GET /users, 7 KB: ${specs.map((s) => s.id).join(', ')}`)
  const variants = withFloorRatios(await alternate(ctx.driver, specs, ctx.rounds), FLOOR_ID)
  const pick = (...ids: string[]) => variants.filter((v) => [DIRECT_ID, FLOOR_ID, BARE_ID, ...ids].includes(v.id))
  const request = `GET /users?size=7k (50-user page, 7 KB) from the static upstream, ${connections} connections`
  const key = judge({
    id: 'api-key',
    title: 'GET /users 7 KB, API key, warm cache',
    request,
    variants: pick('nginx', 'gateway-key'),
    candidate: 'gateway-key',
    target: KEY_TARGET
  })
  const floorRatio = variants.find((v) => v.id === 'gateway-key')?.floorRatio ?? NaN
  key.notes.push(`Moonshot, not a target: ≥ ${formatRatio(MOONSHOT.floor)} × the node floor (this run ${formatRatio(floorRatio)}) and ≥ ${formatRatio(MOONSHOT.bare)} × the bare proxy (this run ${formatRatio(key.throughputRatio)}).`)
  return [
    key,
    judge({
      id: 'bearer',
      title: 'GET /users 7 KB, Bearer JWT',
      request,
      variants: pick('gateway-bearer'),
      candidate: 'gateway-bearer',
      target: KEY_TARGET
    }),
    judge({
      id: 'camel',
      title: 'GET /users 7 KB, camel inflection, 50 users',
      request,
      variants: pick('gateway-camel'),
      candidate: 'gateway-camel',
      target: camelTarget('7k')
    })
  ]
}
