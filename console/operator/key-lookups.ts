import type { Answer, ClientFacts } from '../http-json.js'
import type { PageUser } from '../page-user.js'
import type { AdminClient } from './admin-client.js'
import { keyFilterQuery, type KeyFilters } from './key-filters.js'
import type { AdminKey, KeyOwner, Owners } from './key-hygiene.js'

/** Identity's calls the key pages make, each with the operator's own token. */

/** GET /admin/keys with the filters, as identity's query names them. */
export async function listKeys (admin: AdminClient, user: PageUser, client: ClientFacts, filters: KeyFilters): Promise<Answer<{ api_keys: AdminKey[] }>> {
  const query = keyFilterQuery(filters)
  return await admin.call('GET', query === '' ? '/admin/keys' : `/admin/keys?${query}`, user.access, client)
}

/** The users, by id, when the operator may list them; otherwise why not, in words for the page. */
export type OwnersLookup = { known: true, owners: Owners } | { known: false, reason: string }

export const NEEDS_USERS = 'needs admin:users'

/**
 * Keys' owners come from GET /admin/users, which admin:users opens: without it the
 * console does not ask (identity would refuse) and says so instead of guessing.
 */
export async function keyOwners (admin: AdminClient, user: PageUser, client: ClientFacts): Promise<OwnersLookup> {
  if (!user.sections.some((section) => section.id === 'users')) return { known: false, reason: NEEDS_USERS }
  const answer = await admin.call<{ users: KeyOwner[] }>('GET', '/admin/users', user.access, client)
  if (!answer.ok) return { known: false, reason: answer.problem.status === 403 ? NEEDS_USERS : answer.problem.detail }
  return { known: true, owners: new Map(answer.body.users.map((owner) => [owner.id, owner])) }
}
