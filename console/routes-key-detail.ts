import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { IdentityClient, OwnKey, Problem } from './identity-client.js'
import { FORM_TOKEN_FIELD, oneTimeForm } from './form-once.js'
import { formText, type Guard } from './forms.js'
import { DEFAULT_GRACE_SECONDS, GRACE_CHOICES, keyDetailPage, USAGE_RANGES, usageWindow, type UsageRangeName } from './pages/key-detail.js'
import { keysPage } from './pages/keys.js'
import { BASE } from './pages/layout.js'
import { createdKeyPage } from './pages/new-key.js'
import { notFoundPage } from './pages/refused.js'
import { pageUser, type PageUser } from './page-user.js'
import { clientFacts } from './session.js'

const HTML = 'text/html; charset=utf-8'

type User = PageUser
type IdParams = { Params: { id: string }, Querystring: { range?: string } }

const rangeOf = (value: string | undefined): UsageRangeName => value !== undefined && Object.hasOwn(USAGE_RANGES, value) ? value as UsageRangeName : '24h'

/** A key's detail page (facts, usage, rotate, revoke); another user's key or an unknown id is a 404, as identity says. */
export function keyDetailRoutes (app: FastifyInstance, deps: { identity: IdentityClient, now: () => number, guard: Guard }): void {
  const { identity, now, guard } = deps
  const rotateForm = oneTimeForm('rotateFormTokens')

  const userOf = async (request: FastifyRequest, reply: FastifyReply): Promise<User | null> => await pageUser(request, reply, identity, now())

  /** Identity's refusal as a page: its 404 (not the user's key) as the console's own, anything else as an alert on My keys. */
  async function refusal (reply: FastifyReply, user: User, problem: Problem): Promise<FastifyReply> {
    if (problem.status === 404) return await reply.code(404).type(HTML).send(notFoundPage())
    return await reply.code(problem.status >= 400 && problem.status < 500 ? problem.status : 502).type(HTML).send(keysPage({ user, keys: null, error: problem.detail, now: now() }))
  }

  async function showKey (request: FastifyRequest, reply: FastifyReply, user: User, key: OwnKey, range: UsageRangeName, error: { text: string, of: 'rotate' | 'revoke' } | null, status: number): Promise<FastifyReply> {
    const at = now()
    const usage = await identity.keyUsage(user.access, key.id, usageWindow(range, at), clientFacts(request))
    return await reply.code(status).type(HTML).send(keyDetailPage({
      user,
      key,
      range,
      usage: usage.ok ? usage.body : null,
      error: error?.text ?? null,
      errorOf: error?.of ?? null,
      rotateToken: rotateForm.issue(request),
      now: at
    }))
  }

  app.get<IdParams>(`${BASE}/keys/:id`, async (request, reply) => {
    const user = await userOf(request, reply)
    if (user === null) return reply
    const answer = await identity.key(user.access, request.params.id, clientFacts(request))
    if (!answer.ok) return await refusal(reply, user, answer.problem)
    return await showKey(request, reply, user, answer.body.api_key, rangeOf(request.query.range), null, 200)
  })

  app.post<IdParams>(`${BASE}/keys/:id/rotate`, { preHandler: guard }, async (request, reply) => {
    const user = await userOf(request, reply)
    if (user === null) return reply
    const answer = await identity.key(user.access, request.params.id, clientFacts(request))
    if (!answer.ok) return await refusal(reply, user, answer.problem)
    const grace = Number(formText(request.body, 'grace_seconds') || DEFAULT_GRACE_SECONDS)
    if (!GRACE_CHOICES.some((choice) => choice.seconds === grace)) {
      return await showKey(request, reply, user, answer.body.api_key, '24h', { text: 'Choose how long the old secret keeps working.', of: 'rotate' }, 400)
    }
    // Spent only once the form is readable, as the create form's is: a refused form can be corrected and sent.
    if (!rotateForm.spend(request, formText(request.body, FORM_TOKEN_FIELD))) {
      return await showKey(request, reply, user, answer.body.api_key, '24h', { text: 'This form was already sent: the key was rotated once. Its new secret was shown then.', of: 'rotate' }, 409)
    }
    const rotated = await identity.rotateKey(user.access, answer.body.api_key.id, grace, clientFacts(request))
    if (!rotated.ok) {
      const { problem } = rotated
      if (problem.status === 404) return await refusal(reply, user, problem)
      return await showKey(request, reply, user, answer.body.api_key, '24h', { text: problem.detail, of: 'rotate' }, problem.status >= 400 && problem.status < 500 ? problem.status : 502)
    }
    return await reply.type(HTML).send(createdKeyPage({ user, created: rotated.body, rotated: true }))
  })

  app.post<IdParams>(`${BASE}/keys/:id/revoke`, { preHandler: guard }, async (request, reply) => {
    const user = await userOf(request, reply)
    if (user === null) return reply
    const answer = await identity.key(user.access, request.params.id, clientFacts(request))
    if (!answer.ok) return await refusal(reply, user, answer.problem)
    const key = answer.body.api_key
    // Typing the name is the confirmation: a slip of the mouse, or a stale tab of another key, revokes nothing.
    if (formText(request.body, 'confirm_name') !== key.name) {
      return await showKey(request, reply, user, key, '24h', { text: `Type the key's name, ${key.name}, exactly to revoke it. Nothing was revoked.`, of: 'revoke' }, 400)
    }
    const revoked = await identity.revokeKey(user.access, key.id, clientFacts(request))
    if (!revoked.ok) {
      const { problem } = revoked
      if (problem.status === 404) return await refusal(reply, user, problem)
      return await showKey(request, reply, user, key, '24h', { text: problem.detail, of: 'revoke' }, problem.status >= 400 && problem.status < 500 ? problem.status : 502)
    }
    return await reply.redirect(`${BASE}/keys/${encodeURIComponent(key.id)}`, 303)
  })
}
