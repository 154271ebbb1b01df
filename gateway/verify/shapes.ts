import { isIP } from 'node:net'
import type { IncomingHttpHeaders } from 'node:http'
import type { FastifyRequest } from 'fastify'
import { GatewayProblems } from '../errors.js'
import { plainAddress } from './address-list.js'
import type { VerifyQuestion } from './decide.js'

/** Where Envoy's ext_authz HTTP service is pointed (`path_prefix`): Envoy appends the original path and query. */
export const ENVOY_PREFIX = '/v1/verify/envoy'

/** The body of POST /v1/verify. */
export interface JsonQuestion {
  method: string
  path: string
  key?: string
  token?: string
  ip?: string
}

/** One value of a header a proxy sets once; a repeated one is no description at all. */
function single (headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name]
  return typeof value === 'string' && value !== '' ? value : undefined
}

/**
 * The client's address as the proxy saw it: the last X-Forwarded-For entry (the one
 * the proxy in front appended), else the caller's own address (a proxy that sent none).
 */
function clientAddress (request: FastifyRequest): string {
  const forwarded = single(request.headers, 'x-forwarded-for')?.split(',').at(-1)?.trim()
  return forwarded !== undefined && isIP(forwarded) !== 0 ? plainAddress(forwarded) : plainAddress(request.socket.remoteAddress ?? '')
}

/** The credential and method-override headers a question carries: what the request path reads of a request's headers. */
function credentialHeaders (question: JsonQuestion): IncomingHttpHeaders {
  return {
    ...(question.key !== undefined ? { 'x-api-key': question.key } : {}),
    ...(question.token !== undefined ? { authorization: `Bearer ${question.token}` } : {})
  }
}

/** JSON: everything in the body; the client's address too when the caller knows it. */
export function jsonQuestion (request: FastifyRequest<{ Body: JsonQuestion }>): VerifyQuestion {
  const { body } = request
  if (body.ip !== undefined && isIP(body.ip) === 0) throw GatewayProblems.verifyQuestionInvalid(['ip is not an IP address'])
  return { method: body.method, url: body.path, headers: credentialHeaders(body), ip: body.ip ?? plainAddress(request.socket.remoteAddress ?? '') }
}

/** A proxy that describes the request in two headers of its own (nginx's X-Original-*, ForwardAuth's X-Forwarded-*), the client's headers beside them. */
function describedIn (methodHeader: string, uriHeader: string) {
  return (request: FastifyRequest): VerifyQuestion => {
    const method = single(request.headers, methodHeader)
    const url = single(request.headers, uriHeader)
    if (method === undefined || url === undefined) throw GatewayProblems.verifyQuestionInvalid([`send ${methodHeader} and ${uriHeader}, once each`])
    return { method, url, headers: request.headers, ip: clientAddress(request) }
  }
}

/** nginx auth_request: the subrequest carries the client's headers; the config adds X-Original-Method and X-Original-URI. */
export const nginxQuestion = describedIn('x-original-method', 'x-original-uri')

/** Traefik ForwardAuth and Caddy forward_auth: X-Forwarded-Method and X-Forwarded-Uri, the client's headers beside them. */
export const forwardAuthQuestion = describedIn('x-forwarded-method', 'x-forwarded-uri')

/** Envoy ext_authz (HTTP service): the original method, path (after the prefix) and headers. */
export function envoyQuestion (request: FastifyRequest): VerifyQuestion {
  const rest = request.url.slice(ENVOY_PREFIX.length)
  return { method: request.method, url: rest.startsWith('/') ? rest : `/${rest}`, headers: request.headers, ip: clientAddress(request) }
}
