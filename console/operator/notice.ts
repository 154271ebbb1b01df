import type { FastifyReply, FastifyRequest } from 'fastify'
import { html, type Html } from '../html.js'
import { alert } from '../pages/layout.js'

/** What an operator form did: a status when it was done, an alert (identity's refusal) when nothing changed. */
export interface OperatorNotice { kind: 'status' | 'alert', text: string }

declare module '@fastify/secure-session' {
  interface SessionData {
    /** Kept in the encrypted cookie across the redirect and shown once, so nothing of it is in a URL. */
    operatorNotice: OperatorNotice
  }
}

export const done = (text: string): OperatorNotice => ({ kind: 'status', text })
export const refused = (text: string): OperatorNotice => ({ kind: 'alert', text })

/** Post-redirect-get: the page the form came from, with what the form did; reloading it never posts again. */
export async function backTo (request: FastifyRequest, reply: FastifyReply, path: string, notice: OperatorNotice): Promise<FastifyReply> {
  request.session.set('operatorNotice', notice)
  return await reply.redirect(path, 303)
}

/** The notice the last form left, taken out of the cookie so it shows once. */
export function takeNotice (request: FastifyRequest): OperatorNotice | null {
  const notice = request.session.get('operatorNotice') ?? null
  if (notice !== null) request.session.set('operatorNotice', undefined)
  return notice
}

export function noticeBlock (notice: OperatorNotice | null): Html {
  if (notice === null) return html``
  if (notice.kind === 'alert') return alert(notice.text)
  return html`<div class="notice" role="status" id="operator-status"><p>${notice.text}</p></div>`
}
