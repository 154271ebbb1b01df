import { Type, type TSchema } from 'typebox'
import type { HttpApp } from '../common/http-app.js'
import { CommonProblems } from '../common/problem.js'
import { BODY_PROBLEMS, problemResponses } from '../common/problem-schema.js'
import { UpstreamMockProblems } from './errors.js'
import { IdParams, PageMeta, PageQuery, createBodySchema, patchBodySchema } from './schemas.js'
import type { ResourceStore } from './store.js'

/** What the four routes of one resource need to know about it. */
export interface ResourceDefinition<T extends { id: number }> {
  /** Path segment and list member: `users`. */
  plural: string
  /** Named in 404 problems: `user`. */
  singular: string
  /** The full record, as answered. */
  record: TSchema
  /** The members a client may write. */
  fields: Record<string, TSchema>
  /** The fields a POST must give. */
  required: readonly string[]
  /** Every other member of a new record except id and timestamps (a fresh object per call). */
  defaults: () => Omit<T, 'id' | 'created_at' | 'updated_at'> | Record<string, unknown>
  store: ResourceStore<T>
}

/** The `meta` of a list answer; a page past the end is empty, not an error. */
export function pageMeta (page: number, perPage: number, totalCount: number) {
  return { page, per_page: perPage, total_count: totalCount, total_pages: Math.ceil(totalCount / perPage) }
}

/**
 * GET /<plural> (paged), GET /<plural>/:id, POST /<plural>, PATCH /<plural>/:id.
 * PATCH replaces each top-level member it names; nested objects are given whole and
 * validated like on create, so a record can never become invalid.
 */
export function registerResourceRoutes<T extends { id: number }> (app: HttpApp, resource: ResourceDefinition<T>): void {
  const { plural, singular, record, store } = resource
  const List = Type.Object({ [plural]: Type.Array(record), meta: PageMeta })
  const tags = [plural]
  const byId = [CommonProblems.validationFailed, UpstreamMockProblems.resourceNotFound]
  const find = (id: number): T => {
    const found = store.get(id)
    if (found === undefined) throw UpstreamMockProblems.resourceNotFound([singular, id])
    return found
  }

  app.get(`/${plural}`, {
    schema: { summary: `List ${plural}, paged by id`, tags, querystring: PageQuery, response: { 200: List, ...problemResponses(CommonProblems.validationFailed) } }
  }, async (request) => {
    const { page, per_page: perPage } = request.query
    return { [plural]: store.list((page - 1) * perPage, perPage), meta: pageMeta(page, perPage, store.count()) }
  })

  app.get(`/${plural}/:id`, {
    schema: { summary: `Show one ${singular}`, tags, params: IdParams, response: { 200: record, ...problemResponses(byId) } }
  }, async (request) => find(request.params.id))

  app.post(`/${plural}`, {
    schema: {
      summary: `Create a ${singular}`,
      tags,
      body: createBodySchema(resource.fields, resource.required),
      response: { 201: record, ...problemResponses(BODY_PROBLEMS) }
    }
  }, async (request, reply) => {
    const now = new Date().toISOString()
    const created = store.create((id) => ({ id, ...resource.defaults(), ...request.body, created_at: now, updated_at: now }) as unknown as T)
    return await reply.code(201).header('location', `/${plural}/${created.id}`).send(created)
  })

  app.patch(`/${plural}/:id`, {
    schema: {
      summary: `Change a ${singular}`,
      tags,
      params: IdParams,
      body: patchBodySchema(resource.fields),
      response: { 200: record, ...problemResponses(byId, BODY_PROBLEMS) }
    }
  }, async (request) => store.put({ ...find(request.params.id), ...request.body, updated_at: new Date().toISOString() }))
}
