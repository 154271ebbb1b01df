import type { FastifyInstance } from 'fastify'
import type { Guard } from '../forms.js'
import type { Answer } from '../http-json.js'
import type { IdentityClient } from '../identity-client.js'
import { operatorUser } from '../page-user.js'
import { IDLE, NEVER_EXPIRING, overviewPage, type Figure } from '../pages/operator/overview.js'
import { clientFacts } from '../session.js'
import type { AdminClient } from './admin-client.js'
import { sectionById } from './access.js'
import { disabledOwnersKeys, overPrivilegedKeys, type AdminKey, type Owners } from './key-hygiene.js'
import { keyOwners, listKeys } from './key-lookups.js'

const HTML = 'text/html; charset=utf-8'

function figureOf<T> (answer: Answer<{ api_keys: AdminKey[] }>, value: (keys: AdminKey[]) => T): Figure<T> {
  return answer.ok ? { ok: true, value: value(answer.body.api_keys) } : { ok: false, reason: answer.problem.detail }
}

/**
 * Overview: the keys that never expire and those idle, counted by identity's own
 * filters (the numbers are what All keys lists behind each link); over-privileged keys
 * and keys of disabled owners, judged from the active keys and their owners, which
 * need admin:users to be read (without it the cards say so rather than guess).
 */
export function overviewRoutes (app: FastifyInstance, deps: { identity: IdentityClient, admin: AdminClient, now: () => number, guard: Guard }): void {
  const { identity, admin, now } = deps

  app.get(sectionById('overview').path, async (request, reply) => {
    const user = await operatorUser(request, reply, identity, now(), 'overview')
    if (user === null) return reply
    const client = clientFacts(request)
    const [neverExpiring, idle, active, owners] = await Promise.all([
      listKeys(admin, user, client, NEVER_EXPIRING),
      listKeys(admin, user, client, IDLE),
      listKeys(admin, user, client, { status: 'active' }),
      keyOwners(admin, user, client)
    ])
    const withOwners = <T>(judge: (keys: AdminKey[], known: Owners) => T): Figure<T> =>
      owners.known ? figureOf(active, (keys) => judge(keys, owners.owners)) : { ok: false, reason: owners.reason }
    return await reply.type(HTML).send(overviewPage({
      user,
      figures: {
        neverExpiring: figureOf(neverExpiring, (keys) => keys.length),
        idle: figureOf(idle, (keys) => keys.length),
        overPrivileged: withOwners((keys, known) => ({ keys: overPrivilegedKeys(keys, known), owners: known })),
        disabledOwners: withOwners(disabledOwnersKeys)
      }
    }))
  })
}
