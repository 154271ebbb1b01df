import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { decodeJwt } from 'jose'
import { Type } from 'typebox'
import { readBearer } from '../../../common/credentials.js'
import { notePrincipal } from '../../../common/logger.js'
import { AuthDetails, AuthProblems } from '../../../common/problem.js'
import { BODY_PROBLEMS, problemResponses } from '../../../common/problem-schema.js'
import { IdentityDetails, IdentityProblems } from '../../errors.js'
import { BearerHeaders, LoginBody, TokenSet } from '../../schemas.js'
import type { IdentityServices } from '../../services/index.js'
import { actAs } from '../audit-context.js'

/** What a presented access token can be refused for (logout, refresh). */
export const SESSION_TOKEN_PROBLEMS = [AuthProblems.credentialsMissing, IdentityProblems.invalidToken, IdentityProblems.sessionRevoked,
  IdentityProblems.sessionExpired, IdentityProblems.userDisabled]

/** Longest user agent kept on a session; the rest is cut (it is display-only). */
const MAX_USER_AGENT_LENGTH = 512

/** The Bearer of the request, or a 401 `invalid_token` problem (RFC 6750 challenge included). */
export function requireBearer (authorization: string | undefined): string {
  const credential = readBearer(authorization)
  if (credential.kind === 'token') return credential.token
  if (credential.kind === 'missing') throw AuthProblems.credentialsMissing([IdentityDetails.bearerMissing])
  throw IdentityProblems.invalidToken([AuthDetails.malformedBearer])
}

/**
 * Names on the access line the user a token set was just issued to (a login, a
 * refresh): its access token's subject, read without a check since it was signed here
 * a moment ago. The audit actor is left as it was.
 */
export function noteTokenOwner (request: FastifyRequest, tokens: { access_token: string }): void {
  const { sub } = decodeJwt(tokens.access_token)
  if (typeof sub === 'string') notePrincipal(request, { type: 'user', id: sub })
}

/** POST /sessions (login) and DELETE /sessions/current (logout). */
export const sessionRoutes: FastifyPluginAsyncTypebox<{ services: IdentityServices }> = async (app, { services }) => {
  app.post('/sessions', {
    schema: {
      summary: 'Log in: create a session and return its first token set',
      tags: ['sessions'],
      body: LoginBody,
      response: {
        201: TokenSet,
        ...problemResponses(BODY_PROBLEMS, IdentityProblems.invalidCredentials, IdentityProblems.userDisabled, IdentityProblems.loginThrottled)
      }
    }
  }, async (request, reply) => {
    const tokenSet = await services.login({
      email: request.body.session.email,
      password: request.body.session.password,
      ipAddress: request.ip,
      userAgent: (request.headers['user-agent'] ?? '').slice(0, MAX_USER_AGENT_LENGTH)
    })
    noteTokenOwner(request, tokenSet)
    return reply.code(201).header('cache-control', 'no-store').send(tokenSet)
  })

  app.delete('/sessions/current', {
    schema: {
      summary: 'Log out: revoke the session of the Bearer access token',
      tags: ['sessions'],
      security: [{ accessToken: [] }],
      headers: BearerHeaders,
      response: { 204: Type.Null(), ...problemResponses(SESSION_TOKEN_PROBLEMS) }
    }
  }, async (request, reply) => {
    const session = await services.sessions.authenticate(requireBearer(request.headers.authorization))
    actAs(request, { type: 'user', id: session.userId })
    await services.sessions.revoke(session.id, 'logout')
    return await reply.code(204).send(null)
  })
}
