import { html, type Html } from '../../html.js'
import { noticeBlock, type OperatorNotice } from '../../operator/notice.js'
import { BASE, page, type NavUser } from '../layout.js'
import { timeCell } from '../time.js'

/** A user as identity's admin API shows them. */
export interface AdminUser {
  id: string
  email: string
  roles: string[]
  permissions: string[]
  status: 'active' | 'disabled'
  created_at: string
  updated_at: string
  password_changed_at: string
  disabled_at: string | null
}

export const USERS_PATH = `${BASE}/operator/users`
export const userPath = (id: string): string => `${USERS_PATH}/${encodeURIComponent(id)}`

const STATUS_LABELS: Record<AdminUser['status'], string> = { active: 'Enabled', disabled: 'Disabled' }

/** Password rules as identity checks them, so the browser can say so before a round trip. */
const PASSWORD_BOUNDS = html`minlength="8" maxlength="128"`

function status (user: AdminUser): Html {
  return html`<span class="status status-${user.status}">${STATUS_LABELS[user.status]}</span>`
}

const codes = (items: string[], none: string): Html => items.length === 0
  ? html`<span class="detail">${none}</span>`
  : html`${items.map((item, i) => html`${i > 0 ? ', ' : ''}<code>${item}</code>`)}`

/**
 * The roles a user is to hold: a checkbox per existing role, or, for an operator who may
 * not list roles (no admin:roles), their names separated by commas.
 */
function rolePicker (roleNames: string[] | null, chosen: readonly string[], prefix: string): Html {
  if (roleNames === null) {
    return html`<p><label for="${prefix}-roles">Roles</label>
<input id="${prefix}-roles" name="roles_text" value="${chosen.join(', ')}" autocomplete="off" spellcheck="false" aria-describedby="${prefix}-roles-hint">
<span class="hint" id="${prefix}-roles-hint">Role names, separated by commas; empty for none</span></p>`
  }
  if (roleNames.length === 0) return html`<p class="hint">There is no role yet to give.</p>`
  return html`<fieldset class="role-picker">
<legend>Roles</legend>
${roleNames.map((name) => html`<p class="choice"><input type="checkbox" id="${prefix}-role-${name}" name="roles" value="${name}"${chosen.includes(name) ? html` checked` : ''}>
<label for="${prefix}-role-${name}">${name}</label></p>`)}
</fieldset>`
}

function row (user: AdminUser, now: number): Html {
  return html`<tr>
<th scope="row"><a href="${userPath(user.id)}">${user.email}</a></th>
<td>${codes(user.roles, 'none')}</td>
<td>${status(user)}</td>
<td>${timeCell(user.created_at, now)}</td>
</tr>`
}

export interface UsersPageOptions {
  user: NavUser
  /** null when identity could not list them: the page says why in the notice. */
  users: AdminUser[] | null
  /** The existing roles to choose from, or null: then roles are typed by name. */
  roleNames: string[] | null
  notice: OperatorNotice | null
  now: number
}

/** Users: every user of identity, and a form to create one. */
export function usersPage (options: UsersPageOptions): string {
  const { users, now, user } = options
  return page({
    title: 'Users',
    user,
    body: html`<h1>Users</h1>
${noticeBlock(options.notice)}
${users === null
  ? ''
  : html`<div class="table-wrap"><table id="users">
<caption>Every user, oldest first; open one to change their roles, disable them or reset their password</caption>
<thead><tr><th scope="col">E-mail</th><th scope="col">Roles</th><th scope="col">Status</th><th scope="col">Created</th></tr></thead>
<tbody>
${users.map((u) => row(u, now))}
</tbody>
</table></div>`}
<section aria-labelledby="create-title">
<h2 id="create-title">Create a user</h2>
<form method="post" action="${USERS_PATH}" class="stack">
<input type="hidden" name="_csrf" value="${user.csrf}">
<p><label for="new-email">E-mail</label>
<input type="email" id="new-email" name="email" required maxlength="254" autocomplete="off" spellcheck="false"></p>
<p><label for="new-password">Initial password</label>
<input type="password" id="new-password" name="password" required ${PASSWORD_BOUNDS} autocomplete="new-password" aria-describedby="new-password-hint">
<span class="hint" id="new-password-hint">8 to 128 characters. Give it to the user another way than this console.</span></p>
${rolePicker(options.roleNames, [], 'new')}
<p><button type="submit" id="create-user">Create user</button></p>
</form>
</section>`
  })
}

export interface UserPageOptions {
  user: NavUser
  subject: AdminUser
  roleNames: string[] | null
  notice: OperatorNotice | null
  now: number
}

/** One user: their facts, and the forms that change their roles, their status and their password. */
export function userPage (options: UserPageOptions): string {
  const { subject, now, user } = options
  const path = userPath(subject.id)
  const csrf = html`<input type="hidden" name="_csrf" value="${user.csrf}">`
  const enabled = subject.status === 'active'
  return page({
    title: `User ${subject.email}`,
    user,
    body: html`<h1>User “${subject.email}”</h1>
${noticeBlock(options.notice)}
<dl class="facts" id="user-facts">
<dt>E-mail</dt><dd>${subject.email}</dd>
<dt>Status</dt><dd id="user-status">${status(subject)}${subject.disabled_at === null ? '' : html`<span class="detail">since ${timeCell(subject.disabled_at, now)}</span>`}</dd>
<dt>Roles</dt><dd id="user-roles">${codes(subject.roles, 'none')}</dd>
<dt>Permissions</dt><dd>${codes(subject.permissions, 'none')}</dd>
<dt>Created</dt><dd>${timeCell(subject.created_at, now)}</dd>
<dt>Password changed</dt><dd>${timeCell(subject.password_changed_at, now)}</dd>
</dl>
<section aria-labelledby="roles-title">
<h2 id="roles-title">Roles</h2>
<form method="post" action="${path}/roles" class="stack">
${csrf}
${rolePicker(options.roleNames, subject.roles, 'set')}
<p><button type="submit" id="save-roles">Save roles</button></p>
</form>
</section>
<section aria-labelledby="status-title">
<h2 id="status-title">${enabled ? 'Disable' : 'Enable'}</h2>
<form method="post" action="${path}/${enabled ? 'disable' : 'enable'}" class="stack">
${csrf}
<p>${enabled
  ? 'Disabling signs the user out everywhere and refuses their API keys until they are enabled again.'
  : 'Enabling lets the user sign in again and their API keys work again.'}</p>
<p><button type="submit" id="${enabled ? 'disable-user' : 'enable-user'}"${enabled ? html` class="danger"` : ''}>${enabled ? 'Disable user' : 'Enable user'}</button></p>
</form>
</section>
<section aria-labelledby="password-title">
<h2 id="password-title">Reset password</h2>
<form method="post" action="${path}/password" class="stack">
${csrf}
<p><label for="reset-password">New password</label>
<input type="password" id="reset-password" name="password" required ${PASSWORD_BOUNDS} autocomplete="new-password" aria-describedby="reset-password-hint">
<span class="hint" id="reset-password-hint">8 to 128 characters. Setting it ends all of the user's sessions.</span></p>
<p><button type="submit" id="reset-password-button">Set password</button></p>
</form>
</section>
<p><a href="${USERS_PATH}">Back to users</a></p>`
  })
}
