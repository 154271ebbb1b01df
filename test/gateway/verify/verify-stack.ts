import type { Test } from 'tap'
import { buildVerifyServer, type VerifyServerConfig } from '../../../gateway/verify/server.js'
import { http, type HttpAnswer } from '../../helpers/http.js'
import { startStack, type Stack } from '../../helpers/gateway.js'

export const LOOPBACK = ['127.0.0.1/32', '::1/128']

/** The shapes a request's question can be asked in, and what each says of it. */
export type Shape = 'json' | 'nginx' | 'forward-auth' | 'envoy'
export const SHAPES: readonly Shape[] = ['json', 'nginx', 'forward-auth', 'envoy']

/** What one shape answered, read the same way for all: the code, the status, the identity headers. */
export interface ShapeAnswer {
  code: string
  status: number
  answer: HttpAnswer
}

export interface VerifyStack extends Stack {
  verifyUrl: string
  /** Asks the verify API in `shape` whether `method path` with `credential` headers may pass. */
  ask: (shape: Shape, method: string, path: string, credential: Record<string, string>, extra?: Record<string, string>) => Promise<ShapeAnswer>
}

/** A stack (identity, Redis, upstream mock, gateway) with the gateway's verify listener on loopback. */
export async function startVerifyStack (t: Test, options: { roles?: Record<string, string[]>, verify?: Partial<VerifyServerConfig> } = {}): Promise<VerifyStack> {
  const s = await startStack(t, { ...(options.roles !== undefined ? { roles: options.roles } : {}) })
  const verify = await buildVerifyServer({ logLevel: 'warn', clients: LOOPBACK, proxies: LOOPBACK, allowMaxAgeSeconds: 0, ...options.verify }, s.gateway.app.portierGateway)
  t.teardown(async () => { await verify.close() })
  const verifyUrl = await verify.listen({ host: '127.0.0.1', port: 0 })
  const ask: VerifyStack['ask'] = async (shape, method, path, credential, extra = {}) => {
    if (shape === 'json') {
      const body = { method, path, ...(credential['x-api-key'] !== undefined ? { key: credential['x-api-key'] } : {}), ...(credential.authorization !== undefined ? { token: credential.authorization.replace(/^Bearer /, '') } : {}) }
      const answer = await http(`${verifyUrl}/v1/verify`, { method: 'POST', body, headers: extra })
      return { code: answer.body?.code, status: answer.status, answer }
    }
    const answer = shape === 'nginx'
      ? await http(`${verifyUrl}/v1/verify/nginx`, { headers: { ...credential, 'x-original-method': method, 'x-original-uri': path, ...extra } })
      : shape === 'forward-auth'
        ? await http(`${verifyUrl}/v1/verify/forward-auth`, { headers: { ...credential, 'x-forwarded-method': method, 'x-forwarded-uri': path, 'x-forwarded-host': 'api.example.com', ...extra } })
        : await http(`${verifyUrl}/v1/verify/envoy${path}`, { method, headers: { ...credential, ...extra } })
    return { code: answer.headers['x-portier-verify-code'] ?? '', status: answer.status, answer }
  }
  return { ...s, verifyUrl, ask }
}
