import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { IdentityClient, KeyUsage, OwnKey } from './identity-client.js'
import { FORM_TOKEN_FIELD, oneTimeForm } from './form-once.js'
import { formList, formText, type Guard } from './forms.js'
import { USAGE_RANGES, usageWindow } from './pages/key-detail.js'
import { keysPage, type RecentUsage } from './pages/keys.js'
import { BASE } from './pages/layout.js'
import { createdKeyPage, EMPTY_DRAFT, EXPIRY_PRESETS_DAYS, newKeyPage, type KeyDraft } from './pages/new-key.js'
import { pageUser, type PageUser } from './page-user.js'
import { clientFacts } from './session.js'

const DAY_MS = 86_400_000
/** The period of My keys' sparklines: the key page's own "7 days", so both show the same numbers. */
const RECENT = '7d'
/** Most usage calls one page makes at once: identity's default cap on a user's own active keys (keys an operator made for them are not counted there). */
const MAX_RECENT = 25
const ALREADY_SENT = 'This form was already sent: the key was made once. See My keys.'
const HTML = 'text/html; charset=utf-8'

/** Operator permissions never go on a key (identity refuses them): they are not offered. */
const offered = (permissions: string[]): string[] => permissions.filter((p) => !p.startsWith('admin:'))

/** The expiry the form asks for, or why it cannot be read. */
function expiryOf (draft: KeyDraft, now: number): string | { error: string } {
  if (draft.expiry === 'custom') {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(draft.customDate)) return { error: 'Choose the expiry date.' }
    const at = Date.parse(`${draft.customDate}T00:00:00Z`)
    if (Number.isNaN(at) || at <= now) return { error: 'The expiry date must be in the future.' }
    return new Date(at).toISOString()
  }
  const days = Number(draft.expiry)
  if (!(EXPIRY_PRESETS_DAYS as readonly number[]).includes(days)) return { error: 'Choose when the key expires.' }
  return new Date(now + days * DAY_MS).toISOString()
}

export function keyRoutes (app: FastifyInstance, deps: { identity: IdentityClient, now: () => number, guard: Guard }): void {
  const { identity, now, guard } = deps
  // Back and resend, or a double click, must not make a second key: each form shown is accepted once.
  const createForm = oneTimeForm('keyFormTokens')

  const userOf = async (request: FastifyRequest, reply: FastifyReply): Promise<PageUser | null> => await pageUser(request, reply, identity, now())

  async function showForm (request: FastifyRequest, reply: FastifyReply, user: PageUser, draft: KeyDraft, error: string | null, status: number): Promise<FastifyReply> {
    const profile = await identity.profile(user.access, clientFacts(request))
    if (!profile.ok) return await reply.code(502).type(HTML).send(keysPage({ user, keys: null, error: profile.problem.detail, now: now() }))
    return await reply.code(status).type(HTML).send(newKeyPage({
      user,
      permissions: offered(profile.body.permissions),
      maxLifetimeDays: profile.body.self_service.key_max_lifetime_days,
      draft,
      error,
      formToken: createForm.issue(request),
      now: now()
    }))
  }

  /**
   * The last 7 days of each key that can still be used (the first MAX_RECENT of them),
   * asked for all at once; a failed answer costs that key its sparkline, never the page.
   */
  async function recentUsage (request: FastifyRequest, user: PageUser, keys: OwnKey[]): Promise<RecentUsage> {
    const window = usageWindow(RECENT, now())
    const live = keys.filter((key) => key.status === 'active').slice(0, MAX_RECENT)
    const answers = await Promise.all(live.map(async (key) => await identity.keyUsage(user.access, key.id, window, clientFacts(request))))
    const ofKey = new Map<string, KeyUsage | null>(live.map((key, i) => {
      const answer = answers[i]
      return [key.id, answer?.ok === true ? answer.body : null]
    }))
    return { heading: 'Last 7 days', period: USAGE_RANGES[RECENT].label, ofKey }
  }

  app.get(`${BASE}/keys`, async (request, reply) => {
    const user = await userOf(request, reply)
    if (user === null) return reply
    const answer = await identity.keys(user.access, clientFacts(request))
    if (!answer.ok) return await reply.code(502).type(HTML).send(keysPage({ user, keys: null, error: answer.problem.detail, now: now() }))
    const keys = answer.body.api_keys
    return await reply.type(HTML).send(keysPage({ user, keys, recent: await recentUsage(request, user, keys), error: null, now: now() }))
  })

  app.get(`${BASE}/keys/new`, async (request, reply) => {
    const user = await userOf(request, reply)
    if (user === null) return reply
    return await showForm(request, reply, user, EMPTY_DRAFT, null, 200)
  })

  app.post(`${BASE}/keys`, { preHandler: guard }, async (request, reply) => {
    const user = await userOf(request, reply)
    if (user === null) return reply
    const draft: KeyDraft = {
      name: formText(request.body, 'name'),
      permissions: formList(request.body, 'permissions'),
      expiry: formText(request.body, 'expiry'),
      customDate: formText(request.body, 'expiry_date')
    }
    const expiresAt = expiryOf(draft, now())
    if (typeof expiresAt !== 'string') return await showForm(request, reply, user, draft, expiresAt.error, 400)
    if (draft.name === '') return await showForm(request, reply, user, draft, 'Give the key a name.', 400)
    if (draft.permissions.length === 0) return await showForm(request, reply, user, draft, 'Choose at least one permission.', 400)
    // Spent only now, just before identity is asked: a form refused above can be corrected and sent again.
    if (!createForm.spend(request, formText(request.body, FORM_TOKEN_FIELD))) return await showForm(request, reply, user, EMPTY_DRAFT, ALREADY_SENT, 409)
    // Identity checks the permissions against the user's own (403 permission_not_held): the form's list is only a convenience.
    const created = await identity.createKey(user.access, { name: draft.name, permissions: draft.permissions, expires_at: expiresAt }, clientFacts(request))
    if (!created.ok) {
      const { problem } = created
      return await showForm(request, reply, user, draft, problem.detail, problem.status >= 400 && problem.status < 500 ? problem.status : 502)
    }
    return await reply.code(201).type(HTML).send(createdKeyPage({ user, created: created.body }))
  })
}
