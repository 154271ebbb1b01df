import { randomBytes } from 'node:crypto'
import type { FastifyRequest } from 'fastify'

/**
 * One-time form tokens, for a form whose post must not act twice (creating or rotating a key): each
 * form shown carries a random token that the encrypted session cookie lists as
 * outstanding, and a post is accepted only with an outstanding token, which it takes
 * off the list. A resend after the back button carries a cookie without it.
 *
 * A double click sends the second post before the first answer has replaced the cookie,
 * so the cookie still lists the token: the tokens spent lately are also remembered in
 * the process, checked and marked with no await between, so the second post is refused
 * too. (The cookie alone would do for a console of several replicas but for this race.)
 */

declare module '@fastify/secure-session' {
  interface SessionData {
    /** The create-key forms shown and not yet sent. */
    keyFormTokens: string[]
    /** The rotate forms shown and not yet sent: a rotation sent twice would replace the secret just shown. */
    rotateFormTokens: string[]
  }
}

/** The session fields that hold a form's outstanding tokens. */
export type OneTimeFormField = 'keyFormTokens' | 'rotateFormTokens'

/** The form field that carries the token. */
export const FORM_TOKEN_FIELD = 'form_token'

/** Forms of one kind open at once (tabs, a form shown again after a refusal): older ones are forgotten first. */
const MAX_OUTSTANDING = 5
/** Spent tokens remembered for the double-click race: far more than the posts of one burst, a few hundred KB at most. */
const MAX_REMEMBERED_SPENT = 10_000

export interface OneTimeForm {
  /** A new token for a form about to be shown. */
  issue: (request: FastifyRequest) => string
  /** True once for a token this session was given; false when it is missing, unknown or spent. */
  spend: (request: FastifyRequest, token: string) => boolean
}

export function oneTimeForm (field: OneTimeFormField): OneTimeForm {
  const spent = new Set<string>()

  function remember (token: string): void {
    spent.add(token)
    // A Set iterates in insertion order: the first is the oldest.
    if (spent.size > MAX_REMEMBERED_SPENT) spent.delete(spent.values().next().value as string)
  }

  return {
    issue (request) {
      const token = randomBytes(16).toString('base64url')
      const outstanding = request.session.get(field) ?? []
      request.session.set(field, [...outstanding, token].slice(-MAX_OUTSTANDING))
      return token
    },
    spend (request, token) {
      const outstanding = request.session.get(field) ?? []
      if (token === '' || !outstanding.includes(token)) return false
      request.session.set(field, outstanding.filter((t) => t !== token))
      if (spent.has(token)) return false
      remember(token)
      return true
    }
  }
}
