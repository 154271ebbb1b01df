import { html } from '../html.js'
import { FORM_TOKEN_FIELD } from '../form-once.js'
import type { CreatedKey } from '../identity-client.js'
import { alert, BASE, page, type NavUser } from './layout.js'

export const EXPIRY_PRESETS_DAYS = [7, 30, 60, 90] as const

/** What the form was given, to show it again after a refusal. */
export interface KeyDraft { name: string, permissions: string[], expiry: string, customDate: string }

export const EMPTY_DRAFT: KeyDraft = { name: '', permissions: [], expiry: String(EXPIRY_PRESETS_DAYS[0]), customDate: '' }

interface FormOptions {
  user: NavUser
  /** The user's own permissions (GET /me): the only ones offered. */
  permissions: string[]
  maxLifetimeDays: number
  draft: KeyDraft
  error: string | null
  /** This form's one-time token: the key is made once, however often the form is sent. */
  formToken: string
  now: number
}

const day = (ms: number): string => new Date(ms).toISOString().slice(0, 10)

export function newKeyPage (options: FormOptions): string {
  const { draft, now } = options
  const presets = EXPIRY_PRESETS_DAYS.filter((days) => days <= options.maxLifetimeDays)
  return page({
    title: 'Create a key',
    user: options.user,
    body: html`<h1>Create a key</h1>
${alert(options.error)}
<form method="post" action="${BASE}/keys" class="stack">
<input type="hidden" name="_csrf" value="${options.user.csrf}">
<input type="hidden" name="${FORM_TOKEN_FIELD}" value="${options.formToken}">
<p><label for="name">Name</label>
<input id="name" name="name" required maxlength="100" value="${draft.name}" aria-describedby="name-hint">
<span class="hint" id="name-hint">Yours alone: it must differ from your other keys' names.</span></p>
<fieldset>
<legend>Permissions</legend>
${options.permissions.length === 0
  ? html`<p>You hold no permission a key could be given.</p>`
  : options.permissions.map((permission, i) => html`<p class="choice"><input type="checkbox" id="permission-${i}" name="permissions" value="${permission}"${draft.permissions.includes(permission) ? html` checked` : ''}>
<label for="permission-${i}"><code>${permission}</code></label></p>`)}
</fieldset>
<fieldset>
<legend>Expires</legend>
${presets.map((days) => html`<p class="choice"><input type="radio" id="expiry-${days}" name="expiry" value="${days}"${draft.expiry === String(days) ? html` checked` : ''}>
<label for="expiry-${days}">In ${days} days (${day(now + days * 86_400_000)})</label></p>`)}
<p class="choice"><input type="radio" id="expiry-custom" name="expiry" value="custom"${draft.expiry === 'custom' ? html` checked` : ''}>
<label for="expiry-custom">On a date</label>
<label for="expiry-date" class="visually-hidden">Expiry date</label>
<input type="date" id="expiry-date" name="expiry_date" min="${day(now + 86_400_000)}" max="${day(now + options.maxLifetimeDays * 86_400_000)}" value="${draft.customDate}"></p>
<p class="hint">At most ${options.maxLifetimeDays} days from today.</p>
</fieldset>
<p><button type="submit" id="create-key">Create key</button></p>
</form>`
  })
}

/**
 * The new key's secret, shown once: in a dialog open from the start, so it shows
 * without script too; the script makes it modal and adds the Copy button. The answer
 * is `Cache-Control: no-store` and the console keeps the secret nowhere.
 */
export function createdKeyPage (options: { user: NavUser, created: CreatedKey, rotated?: boolean }): string {
  const { created } = options
  // A rotation shows its new secret in the same dialog, and goes back to the key it rotated.
  const title = options.rotated === true ? 'Key rotated' : 'Key created'
  const back = options.rotated === true
    ? html`<a class="button" id="secret-done" href="${BASE}/keys/${encodeURIComponent(created.api_key.id)}">Done: back to the key</a>`
    : html`<a class="button" id="secret-done" href="${BASE}/keys">Done: back to my keys</a>`
  return page({
    title,
    user: options.user,
    body: html`<h1>${title}</h1>
<dialog id="secret-dialog" open aria-labelledby="secret-title">
<h2 id="secret-title">Your new ${options.rotated === true ? 'secret for' : 'key'} "${created.api_key.name}"</h2>
<p>Copy it now: it is shown this once and can never be shown again.</p>
<p><label for="secret">API key</label>
<input id="secret" class="secret" readonly value="${created.key}" spellcheck="false" autocomplete="off"></p>
${created.warnings.map((warning) => html`<p class="warning">${warning}</p>`)}
<p class="actions"><button type="button" id="copy-secret" hidden>Copy</button>
${back}</p>
<p id="copy-status" class="status-line" role="status" aria-live="polite"></p>
</dialog>`
  })
}
