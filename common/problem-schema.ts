import { STATUS_CODES } from 'node:http'
import { Type, type TUnsafe } from 'typebox'
import { CommonProblems, type ProblemBody, type ProblemFactory } from './problem.js'

/**
 * The problem+json body (RFC 9457) as a JSON schema, and the route-schema entries
 * that declare which problems a route answers. Declared in the route schema, they
 * are what the OpenAPI documents list: there is no second, hand-written list.
 */
export const PROBLEM_SCHEMA_ID = 'Problem'

/**
 * Registered once per app (createHttpApp) and referenced by `$ref`, so the documents
 * hold it once, as `#/components/schemas/Problem`. Open to extension members
 * (RFC 9457 §3.2): the serializer keeps them.
 */
export const ProblemSchema = Type.Object({
  type: Type.String({ description: 'urn:portier:problem:<code>' }),
  title: Type.String({ description: 'Constant per code.' }),
  status: Type.Integer({ minimum: 400, maximum: 599 }),
  detail: Type.String({ description: 'This occurrence, in words; never a secret.' }),
  code: Type.String({ pattern: '^[a-z][a-z0-9_]*$', description: 'Stable, never reused: what a client branches on.' })
}, {
  $id: PROBLEM_SCHEMA_ID,
  additionalProperties: true,
  description: 'RFC 9457 problem details, served as application/problem+json; extension members (e.g. `errors`) depend on the code.'
})

export const PROBLEM_MEDIA_TYPE = 'application/problem+json'

/** Problems any route with a JSON body can answer before its handler runs. */
export const BODY_PROBLEMS: readonly ProblemFactory[] = Object.freeze([
  CommonProblems.validationFailed, CommonProblems.malformedJson, CommonProblems.emptyBody,
  CommonProblems.bodyTooLarge, CommonProblems.unsupportedMediaType
])

/** Every Portier route can answer these: the Accept check (common/accept.ts) and the unexpected. */
const ALWAYS: readonly ProblemFactory[] = [CommonProblems.notAcceptable, CommonProblems.internal]

/** A response entry of a route schema: documented, and serialized only for problem+json replies. */
export type ProblemResponse = TUnsafe<ProblemBody>

/**
 * Route-schema `response` entries for the problems a route answers, one per status,
 * each describing its codes: `response: { 200: Answer, ...problemResponses(BODY_PROBLEMS, Problems.x) }`.
 * Keyed by media type, so a reply of another type with the same status (the mock's
 * `/status/:code`) keeps the default serializer.
 */
export function problemResponses (...problems: Array<ProblemFactory | readonly ProblemFactory[]>): Record<number, ProblemResponse> {
  const byStatus = new Map<number, string[]>()
  for (const problem of [...problems.flat(), ...ALWAYS]) {
    const codes = byStatus.get(problem.status) ?? []
    if (!codes.includes(problem.code)) codes.push(problem.code)
    byStatus.set(problem.status, codes)
  }
  const entries = [...byStatus].sort(([a], [b]) => a - b).map(([status, codes]) => [status, Type.Unsafe<ProblemBody>({
    description: `${STATUS_CODES[status] ?? 'Error'}: ${codes.map((code) => `\`${code}\``).join(', ')}`,
    content: { [PROBLEM_MEDIA_TYPE]: { schema: Type.Ref(PROBLEM_SCHEMA_ID) } }
  })] as const)
  return Object.fromEntries(entries)
}
