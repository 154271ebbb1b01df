import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { createHttpApp } from '../../common/http-app.js'
import type { ListenerTimeouts } from '../../common/listener-limits.js'
import { isPortierProblem, problemAnswer, PROBLEM_CONTENT_TYPE, type PortierProblem } from '../../common/problem.js'
import { HTTP_METHODS } from '../routing/schema.js'
import { GatewayProblems } from '../errors.js'
import { createAddressList, type AddressList } from './address-list.js'
import { answerFieldsOf, cacheControlOf, CODE_HEADER, identityFields, jsonAnswerOf } from './answers.js'
import { codeOf, problemOf } from './codes.js'
import type { Verdict, VerifyDecision, VerifyQuestion } from './decide.js'
import { ENVOY_PREFIX, envoyQuestion, forwardAuthQuestion, jsonQuestion, nginxQuestion, type JsonQuestion } from './shapes.js'

/** A question is a few headers or a small JSON body: a credential, a method and a path. */
const VERIFY_BODY_LIMIT_BYTES = 16_384

export interface VerifyServerConfig {
  logLevel: string
  timeouts?: ListenerTimeouts
  /** Who may ask in JSON (POST /v1/verify), besides the proxies. */
  clients: readonly string[]
  /** Who may ask in a proxy's shape, its X-Original-* / X-Forwarded-* headers believed. */
  proxies: readonly string[]
  /** An allow that took no limit may be kept this long by the proxy (0: never, `no-store`). */
  allowMaxAgeSeconds: number
}

const JsonQuestionSchema = Type.Object({
  method: Type.String({ minLength: 1, maxLength: 32, pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" }),
  path: Type.String({ minLength: 1, maxLength: 8_192, pattern: '^/' }),
  key: Type.Optional(Type.String({ minLength: 1, maxLength: 1_024 })),
  token: Type.Optional(Type.String({ minLength: 1, maxLength: 8_192 })),
  ip: Type.Optional(Type.String({ minLength: 2, maxLength: 45 }))
}, { additionalProperties: false })

/** How a proxy shape answers a refusal: the problem's own status, or (nginx) one auth_request accepts. */
type DenyStatus = (problem: PortierProblem) => number

/**
 * nginx's auth_request takes 2xx as allow and 401 / 403 as deny; any other status is
 * an error that nginx answers its client with a 500. So a 401 stays a 401 and every
 * other refusal (a 429 included) is a 403, its reason in X-Portier-Verify-Code (and
 * Retry-After) for the config to turn back into a 429 (deploy/verify/nginx.conf).
 */
const nginxDenyStatus: DenyStatus = (problem) => problem.statusCode === 401 ? 401 : 403
const ownDenyStatus: DenyStatus = (problem) => problem.statusCode ?? 500

function callerOf (request: FastifyRequest): string | undefined {
  return request.socket.remoteAddress
}

/**
 * Answers a proxy shape: allow is 200 without a body, deny the problem+json the
 * gateway would have answered (nginx reads no body), with the status `denyStatus`
 * says. Both carry the identity headers (empty when there is no one to name), the
 * decision's code, the RateLimit and Retry-After fields, and Cache-Control.
 */
function answerProxy (reply: FastifyReply, verdict: Verdict, denyStatus: DenyStatus, maxAgeSeconds: number): void {
  const headers: Record<string, string> = { ...answerFieldsOf(verdict) }
  const identity = identityFields(verdict.principal)
  for (let i = 0; i + 1 < identity.length; i += 2) headers[identity[i] as string] = identity[i + 1] as string
  headers[CODE_HEADER] = codeOf(verdict)
  headers['cache-control'] = cacheControlOf(verdict, maxAgeSeconds)
  if (verdict.allowed) {
    void reply.code(200).headers(headers).send()
    return
  }
  const answer = problemAnswer(problemOf(verdict))
  void reply.code(denyStatus(problemOf(verdict))).headers({ ...headers, ...answer.headers }).type(PROBLEM_CONTENT_TYPE).send(answer.body)
}

/** A question that cannot be read, or a caller refused, answered in the shape's terms. */
function refuseProxy (reply: FastifyReply, problem: PortierProblem, denyStatus: DenyStatus): void {
  const answer = problemAnswer(problem)
  const identity = identityFields(null)
  const headers: Record<string, string> = { ...answer.headers, [CODE_HEADER]: 'FORBIDDEN', 'cache-control': 'no-store' }
  for (let i = 0; i + 1 < identity.length; i += 2) headers[identity[i] as string] = ''
  void reply.code(denyStatus(problem)).headers(headers).type(PROBLEM_CONTENT_TYPE).send(answer.body)
}

/** The proxy shapes: any method (nginx and Envoy ask with the client's), any body ignored, any Accept served. */
async function proxyShapes (app: FastifyInstance, options: { decide: VerifyDecision, proxies: AddressList, maxAgeSeconds: number }): Promise<void> {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', (_request, _payload, done) => { done(null) })
  const shape = (url: string, read: (request: FastifyRequest) => VerifyQuestion, denyStatus: DenyStatus): void => {
    app.route({
      method: [...HTTP_METHODS],
      url,
      config: { acceptsAnyMediaType: true },
      schema: { hide: true },
      handler: async (request, reply) => {
        // Only a proxy may describe someone else's request in headers: from anyone else they are no description.
        if (!options.proxies.has(callerOf(request))) {
          refuseProxy(reply, GatewayProblems.verifyCallerRefused(['ask in a proxy\'s shape']), denyStatus)
          return
        }
        let question: VerifyQuestion
        try {
          question = read(request)
        } catch (err) {
          if (!isPortierProblem(err)) throw err
          refuseProxy(reply, err, denyStatus)
          return
        }
        answerProxy(reply, await options.decide(question), denyStatus, options.maxAgeSeconds)
      }
    })
  }
  shape('/v1/verify/nginx', nginxQuestion, nginxDenyStatus)
  shape('/v1/verify/forward-auth', forwardAuthQuestion, ownDenyStatus)
  shape(ENVOY_PREFIX, envoyQuestion, ownDenyStatus)
  shape(`${ENVOY_PREFIX}/*`, envoyQuestion, ownDenyStatus)
}

/**
 * The verify listener (GATEWAY_VERIFY_LISTENER): proxies in front of other services
 * ask it whether a request may pass, and the gateway's own decision answers
 * (decide.ts). JSON for any client it admits, and the shapes of nginx auth_request,
 * Traefik / Caddy forward auth and Envoy ext_authz for the proxies. A listener of its
 * own, so that nothing of it is reachable from the public one; a caller it does not
 * admit is a 403.
 */
export async function buildVerifyServer (config: VerifyServerConfig, gateway: { verify: VerifyDecision },
  options: { logStream?: NodeJS.WritableStream } = {}) {
  const app = createHttpApp({
    name: 'gateway-verify',
    logLevel: config.logLevel,
    ...(options.logStream !== undefined ? { logStream: options.logStream } : {}),
    bodyLimitBytes: VERIFY_BODY_LIMIT_BYTES,
    ...(config.timeouts !== undefined ? { timeouts: config.timeouts } : {})
  })
  const clients = createAddressList(config.clients)
  const proxies = createAddressList(config.proxies)
  const decide = gateway.verify
  const admitted = (request: FastifyRequest): boolean => clients.has(callerOf(request)) || proxies.has(callerOf(request))
  app.post('/v1/verify', {
    schema: { body: JsonQuestionSchema },
    // Before the body is read: an address not admitted learns nothing, not even what a question looks like.
    onRequest: (request, _reply, done) => { done(admitted(request) ? undefined : GatewayProblems.verifyCallerRefused(['ask'])) }
  }, async (request, reply) => {
    const verdict = await decide(jsonQuestion(request as FastifyRequest<{ Body: JsonQuestion }>))
    void reply.header('cache-control', 'no-store')
    return jsonAnswerOf(verdict)
  })
  await app.register(proxyShapes, { decide, proxies, maxAgeSeconds: config.allowMaxAgeSeconds })
  return app
}
