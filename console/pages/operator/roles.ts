import type { TrafficPolicy } from '../../../common/traffic/policy.js'
import { html, type Html } from '../../html.js'
import { noticeBlock, type OperatorNotice } from '../../operator/notice.js'
import { BASE, page, type NavUser } from '../layout.js'
import { timeCell } from '../time.js'

/** A role as identity's admin API shows it. */
export interface AdminRole {
  name: string
  permissions: string[]
  policies: TrafficPolicy[]
  /** null: the configured default. */
  key_max_lifetime_days: number | null
  created_at: string
  updated_at: string
}

export const ROLES_PATH = `${BASE}/operator/roles`
export const rolePath = (name: string): string => `${ROLES_PATH}/${encodeURIComponent(name)}`

/** What the forms were given, shown again after a refusal so nothing typed is lost. */
export interface RoleDraft { name: string, permissions: string, lifetime: string, policies: string }

export const EMPTY_ROLE_DRAFT: RoleDraft = { name: '', permissions: '', lifetime: '', policies: '' }

/** The forms' text of a role as it is. */
export function draftOf (role: AdminRole): RoleDraft {
  return {
    name: role.name,
    permissions: role.permissions.join('\n'),
    lifetime: role.key_max_lifetime_days === null ? '' : String(role.key_max_lifetime_days),
    policies: role.policies.length === 0 ? '' : JSON.stringify(role.policies, null, 2)
  }
}

/** A policy in a few words: `burst: 100 per 60 s per key`. */
export function policySummary (policy: TrafficPolicy): string {
  switch (policy.kind) {
    case 'rate': return `${policy.name}: ${policy.limit} per ${policy.window_seconds} s per ${policy.partition}`
    case 'quota': return `${policy.name}: ${policy.limit} ${policy.period === 'never' ? 'in all' : `per ${policy.period}`} per ${policy.partition}`
    case 'concurrency': return `${policy.name}: ${policy.limit} at once per ${policy.partition}`
  }
}

const policies = (role: AdminRole): Html => role.policies.length === 0
  ? html`<span class="detail">none</span>`
  : html`<ul class="plain">${role.policies.map((policy) => html`<li>${policySummary(policy)}</li>`)}</ul>`

const permissions = (role: AdminRole): Html => role.permissions.length === 0
  ? html`<span class="detail">none</span>`
  : html`${role.permissions.map((p, i) => html`${i > 0 ? ', ' : ''}<code>${p}</code>`)}`

const lifetime = (role: AdminRole): string => role.key_max_lifetime_days === null ? 'the default' : `${role.key_max_lifetime_days} days`

function row (role: AdminRole): Html {
  return html`<tr>
<th scope="row"><a href="${rolePath(role.name)}">${role.name}</a></th>
<td>${permissions(role)}</td>
<td>${policies(role)}</td>
<td>${lifetime(role)}</td>
</tr>`
}

/** The permissions textarea and the key lifetime field, for a new role and an existing one alike. */
function permissionFields (draft: RoleDraft, prefix: string): Html {
  return html`<p><label for="${prefix}-permissions">Permissions</label>
<textarea id="${prefix}-permissions" name="permissions" rows="6" cols="40" spellcheck="false" aria-describedby="${prefix}-permissions-hint">${draft.permissions}</textarea>
<span class="hint" id="${prefix}-permissions-hint">One a line, as <code>resource:action</code>, <code>resource:*</code> or <code>*</code>; operator permissions (<code>admin:…</code>) only those you hold.</span></p>
<p><label for="${prefix}-lifetime">Longest self-service key lifetime (days)</label>
<input type="number" id="${prefix}-lifetime" name="key_max_lifetime_days" min="1" max="3650" step="1" value="${draft.lifetime}" aria-describedby="${prefix}-lifetime-hint">
<span class="hint" id="${prefix}-lifetime-hint">Empty: the configured default.</span></p>`
}

export interface RolesPageOptions {
  user: NavUser
  /** null when identity could not list them: the notice says why. */
  roles: AdminRole[] | null
  notice: OperatorNotice | null
  draft: RoleDraft
}

/** Roles: every role with what it grants, and a form to create one. */
export function rolesPage (options: RolesPageOptions): string {
  const { roles, user, draft } = options
  return page({
    title: 'Roles',
    user,
    body: html`<h1>Roles</h1>
${noticeBlock(options.notice)}
${roles === null
  ? ''
  : html`<div class="table-wrap"><table id="roles">
<caption>Every role, by name; open one to change it or delete it</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Permissions</th><th scope="col">Traffic policies</th><th scope="col">Key lifetime</th></tr></thead>
<tbody>
${roles.map(row)}
</tbody>
</table></div>`}
<section aria-labelledby="create-title">
<h2 id="create-title">Create a role</h2>
<form method="post" action="${ROLES_PATH}" class="stack">
<input type="hidden" name="_csrf" value="${user.csrf}">
<p><label for="new-name">Name</label>
<input id="new-name" name="name" required maxlength="64" pattern="[a-z][a-z0-9_\\-]{0,63}" value="${draft.name}" autocomplete="off" spellcheck="false" aria-describedby="new-name-hint">
<span class="hint" id="new-name-hint">Lower case letters, digits, <code>_</code> and <code>-</code>, starting with a letter.</span></p>
${permissionFields(draft, 'new')}
<p><button type="submit" id="create-role">Create role</button></p>
</form>
</section>`
  })
}

export interface RolePageOptions {
  user: NavUser
  role: AdminRole
  notice: OperatorNotice | null
  draft: RoleDraft
  now: number
}

/** One role: what it grants, and the forms that change its permissions and key lifetime, its policies, or delete it. */
export function rolePage (options: RolePageOptions): string {
  const { role, user, draft, now } = options
  const path = rolePath(role.name)
  const csrf = html`<input type="hidden" name="_csrf" value="${user.csrf}">`
  return page({
    title: `Role ${role.name}`,
    user,
    body: html`<h1>Role “${role.name}”</h1>
${noticeBlock(options.notice)}
<dl class="facts" id="role-facts">
<dt>Name</dt><dd>${role.name}</dd>
<dt>Permissions</dt><dd id="role-permissions">${permissions(role)}</dd>
<dt>Traffic policies</dt><dd>${policies(role)}</dd>
<dt>Key lifetime</dt><dd id="role-lifetime">${lifetime(role)}</dd>
<dt>Created</dt><dd>${timeCell(role.created_at, now)}</dd>
<dt>Changed</dt><dd>${timeCell(role.updated_at, now)}</dd>
</dl>
<section aria-labelledby="grants-title">
<h2 id="grants-title">Permissions and key lifetime</h2>
<form method="post" action="${path}" class="stack">
${csrf}
${permissionFields(draft, 'edit')}
<p><button type="submit" id="save-role">Save permissions</button></p>
</form>
</section>
<section aria-labelledby="policies-title">
<h2 id="policies-title">Traffic policies</h2>
<form method="post" action="${path}/policies" class="stack">
${csrf}
<p><label for="edit-policies">Policies (JSON)</label>
<textarea id="edit-policies" name="policies" rows="12" cols="60" spellcheck="false" aria-describedby="edit-policies-hint">${draft.policies}</textarea>
<span class="hint" id="edit-policies-hint">A JSON list of at most 8 rate, quota or concurrency policies, as in the admin API; empty for none. Identity checks them.</span></p>
<p><button type="submit" id="save-policies">Save policies</button></p>
</form>
</section>
<section aria-labelledby="delete-title">
<h2 id="delete-title">Delete</h2>
<form method="post" action="${path}/delete" class="stack">
${csrf}
<p>Only a role no user holds can be deleted; deleting it is final.</p>
<p><label for="confirm-name">Type the role's name, ${role.name}, to confirm</label>
<input id="confirm-name" name="confirm_name" required autocomplete="off" spellcheck="false"></p>
<p><button type="submit" id="delete-role" class="danger">Delete role</button></p>
</form>
</section>
<p><a href="${ROLES_PATH}">Back to roles</a></p>`
  })
}
