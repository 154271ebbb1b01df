import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { formText, type Guard } from '../forms.js'
import type { IdentityClient } from '../identity-client.js'
import { operatorUser, type PageUser } from '../page-user.js'
import { allKeysPage, type AllKeysPageOptions } from '../pages/operator/all-keys.js'
import { clientFacts } from '../session.js'
import type { AdminClient } from './admin-client.js'
import { KEYS_PATH, keysPathOf, parseKeyFilters, type KeyFilterName } from './key-filters.js'
import { shortKeyName, type AdminKey } from './key-hygiene.js'
import { keyOwners, listKeys } from './key-lookups.js'
import { backTo, done, refused, takeNotice } from './notice.js'

const HTML = 'text/html; charset=utf-8'

type IdParams = { Params: { id: string } }

/** The query string of a request as the browser sent it: a repeated filter stays visible as such. */
const searchOf = (request: FastifyRequest): URLSearchParams => new URL(request.url, 'http://console.invalid').searchParams

/** A 4xx refusal of identity's is the page's status too; anything else is identity failing. */
const statusOf = (status: number): number => status >= 400 && status < 500 ? status : 502

/**
 * All keys: GET lists identity's keys with the filters of the page's query; POST
 * …/:id/revoke revokes one (through the guard) and comes back to the same filters, said
 * once from the cookie. The filters come back in a hidden field that is read as the
 * query is, so nothing but the known filters reaches the redirect.
 */
export function keysRoutes (app: FastifyInstance, deps: { identity: IdentityClient, admin: AdminClient, now: () => number, guard: Guard }): void {
  const { identity, admin, now, guard } = deps

  const operator = async (request: FastifyRequest, reply: FastifyReply): Promise<PageUser | null> =>
    await operatorUser(request, reply, identity, now(), 'keys')

  app.get(KEYS_PATH, async (request, reply) => {
    const user = await operator(request, reply)
    if (user === null) return reply
    const notice = takeNotice(request)
    const parsed = parseKeyFilters(searchOf(request))
    const owners = await keyOwners(admin, user, clientFacts(request))
    const base: AllKeysPageOptions = { user, input: parsed.input, filters: null, keys: null, owners, refusal: null, notice, now: now() }
    if (!parsed.ok) {
      const fields = new Set(parsed.errors.map((error) => error.name).filter((name): name is KeyFilterName => name !== null))
      return await reply.code(400).type(HTML).send(allKeysPage({ ...base, refusal: { messages: parsed.errors.map((error) => error.message), fields } }))
    }
    const listed = await listKeys(admin, user, clientFacts(request), parsed.filters)
    if (!listed.ok) {
      const { status, detail } = listed.problem
      return await reply.code(statusOf(status)).type(HTML).send(allKeysPage({ ...base, refusal: { messages: [`Identity refused these filters: ${detail}`], fields: new Set() } }))
    }
    return await reply.type(HTML).send(allKeysPage({ ...base, filters: parsed.filters, keys: listed.body.api_keys }))
  })

  app.post<IdParams>(`${KEYS_PATH}/:id/revoke`, { preHandler: guard }, async (request, reply) => {
    const user = await operator(request, reply)
    if (user === null) return reply
    const parsed = parseKeyFilters(new URLSearchParams(formText(request.body, 'filters')))
    // Not the page's own form: nothing is revoked, and the list comes back as it is.
    if (!parsed.ok) return await backTo(request, reply, KEYS_PATH, refused('The form carried filters this page does not make. Nothing was revoked.'))
    const back = keysPathOf(parsed.filters)
    const answer = await admin.call<{ api_key: AdminKey }>('POST', `/admin/keys/${encodeURIComponent(request.params.id)}/revoke`, user.access, clientFacts(request))
    return await backTo(request, reply, back, answer.ok
      ? done(`The key ${shortKeyName(answer.body.api_key)} is revoked: every gateway refuses it within a second.`)
      : refused(`Nothing was revoked: ${answer.problem.detail}`))
  })
}
