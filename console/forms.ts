import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'

/** The preHandler of every state-changing route: same site, same origin, and a valid CSRF token. */
export type Guard = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void

/** One text field of a urlencoded form ('' when absent or repeated). */
export function formText (body: unknown, name: string): string {
  const value = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[name] : undefined
  return typeof value === 'string' ? value.trim() : ''
}

/** A field that may repeat (checkboxes), as a list. */
export function formList (body: unknown, name: string): string[] {
  const value = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[name] : undefined
  if (typeof value === 'string') return [value]
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : []
}
