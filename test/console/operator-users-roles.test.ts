import t from 'tap'
import type { Test } from 'tap'
import { CONTENT_SECURITY_POLICY } from '../../console/security.js'
import { Browser, csrfOf, startConsoleStack, type PageAnswer } from '../helpers/console.js'
import { pollUntil } from '../helpers/gateway-auth.js'
import type { Stack, TestGateway } from '../helpers/gateway.js'
import { makeOperator, type TestOperator } from '../helpers/operators.js'

/**
 * The operator pages Users and Roles through the gateway, against a real identity: an
 * operator holding admin:users and admin:roles creates a user (who can then sign in),
 * sets their roles, disables them (their key refused at the gateway at once), enables
 * them, resets their password; creates and edits a role and its policies, deletes one
 * once its name is typed. Identity's refusals are shown word for word and change
 * nothing; forged and cross-site forms are refused; the pages are closed to users
 * without the operator permission; the audit trail names the operator.
 */

const USERS = '/console/operator/users'
const ROLES = '/console/operator/roles'

// One stack for every subtest: they run in order, each on users and roles of its own.
let s: Stack
let gateway: TestGateway
let operator: TestOperator
let browser: Browser

t.before(async () => {
  ({ s, gateway } = await startConsoleStack(t))
  operator = await makeOperator(t, s, ['admin:users', 'admin:roles'])
  browser = await signedIn(t, operator.email, operator.password)
})

async function signedIn (t: Test, email: string, password: string): Promise<Browser> {
  const browser = new Browser(gateway.url)
  const form = await browser.get('/console/sign-in')
  const answer = await browser.post('/console/sign-in', { _csrf: csrfOf(form), email, password })
  t.equal(answer.status, 303, `signed in as ${email}`)
  return browser
}

const unescape = (text: string): string => text.replace(/&#39;/g, '\'').replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&')

/** The message a form came back with: its role and text. */
function noticeOf (page: PageAnswer): { role: string, text: string } | null {
  const match = /<div class="(?:notice|alert)" role="(status|alert)"[^>]*>\s*<p>([^<]*)<\/p>/.exec(page.text)
  return match === null ? null : { role: match[1] as string, text: unescape(match[2] as string) }
}

/** Posts a form of the page at `from` (its CSRF token), follows the redirect back, and returns both answers. */
async function submit (t: Test, from: string, action: string, form: Record<string, string | string[]>, back = from): Promise<{ posted: PageAnswer, page: PageAnswer }> {
  const posted = await browser.post(action, { _csrf: csrfOf(await browser.get(from)), ...form })
  t.equal(posted.status, 303, `${action}: redirected`)
  t.equal(posted.headers.get('location'), back, `${action}: back to ${back}`)
  return { posted, page: await browser.get(back) }
}

async function userByEmail (email: string): Promise<{ id: string, roles: string[], status: string } | undefined> {
  const answer = await s.admin('GET', '/admin/users')
  const user = (answer.body.users as Array<{ id: string, email: string, roles: string[], status: string }>).find((u) => u.email === email)
  return user === undefined ? undefined : { id: user.id, roles: user.roles, status: user.status }
}

async function newUser (t: Test, email: string, password: string, roles: string[] = ['reader']): Promise<string> {
  const created = await s.admin('POST', '/admin/users', { email, password, roles })
  t.equal(created.status, 201, `${email} created`)
  return created.body.user.id as string
}

const roleOf = async (name: string): Promise<{ status: number, role: any }> => {
  const answer = await s.admin('GET', `/admin/roles/${name}`)
  return { status: answer.status, role: answer.body.role }
}

const keyStatus = async (secret: string): Promise<number> => (await gateway.call('/users?per_page=1', { headers: { 'x-api-key': secret } })).status

function checkPage (t: Test, page: PageAnswer, what: string): void {
  t.equal(page.status, 200, what)
  t.equal(page.headers.get('content-security-policy'), CONTENT_SECURITY_POLICY, `${what}: the CSP`)
  t.equal(page.headers.get('cache-control'), 'no-store', `${what}: never cached`)
  t.notMatch(page.text, /<script>|<style>|style="|\son[a-z]+="/i, `${what}: no inline script or style`)
  t.equal(page.text.match(/<h1>/g)?.length, 1, `${what}: one h1`)
}

t.test('the users page lists users and creates one, who can then sign in', async (t) => {
  const page = await browser.get(USERS)
  checkPage(t, page, 'Users')
  t.match(page.text, /<a href="\/console\/operator\/users">Users<\/a>/, 'in the operator navigation')
  t.ok(page.text.includes(`>${s.user.email}</a></th>`), 'the stack\'s user is listed')
  t.match(page.text, /<input type="checkbox" id="new-role-reader" name="roles" value="reader">/, 'the existing roles are offered as checkboxes')

  const password = 'newbie password 1'
  const { posted, page: after } = await submit(t, USERS, USERS, { email: 'newbie@example.com', password, roles: ['reader'] })
  t.same(noticeOf(after), { role: 'status', text: 'newbie@example.com is created, holding reader.' }, 'the page says it is done')
  t.match(after.text, /<th scope="row"><a href="\/console\/operator\/users\/[^"]+">newbie@example\.com<\/a><\/th>\s*<td><code>reader<\/code><\/td>\s*<td><span class="status status-active">Enabled<\/span>/, 'the new user is listed, enabled, with their role')
  t.notOk(after.text.includes(password) || String(posted.headers.get('location')).includes(password), 'the password is in no page and no URL')
  t.equal(noticeOf(await browser.get(USERS)), null, 'the notice shows once')
  t.equal((await s.loginAs({ email: 'newbie@example.com', password })).status, 201, 'the new user signs in to identity')

  const taken = await submit(t, USERS, USERS, { email: 'newbie@example.com', password: 'another password', roles: ['reader'] })
  t.same(noticeOf(taken.page), { role: 'alert', text: 'A user with this e-mail already exists.' }, 'a taken e-mail: identity\'s reason')
  const short = await submit(t, USERS, USERS, { email: 'short@example.com', password: 'short' })
  t.equal(noticeOf(short.page)?.role, 'alert', 'a too short password: identity\'s reason')
  t.match(noticeOf(short.page)?.text, /password/, 'which names the password')
  t.equal(await userByEmail('short@example.com'), undefined, 'and nobody is created')
  const empty = await submit(t, USERS, USERS, { email: '', password: '' })
  t.same(noticeOf(empty.page), { role: 'alert', text: 'Give the new user\'s e-mail and initial password. Nothing was changed.' }, 'an empty form is not sent')
})

t.test('a user\'s page: roles, disabling (their key refused at once), enabling, a new password', async (t) => {
  t.equal((await s.admin('PUT', '/admin/roles/writer', { permissions: ['tasks:*'] })).status, 200, 'a second role')
  const oldPassword = 'disable me password'
  const id = await newUser(t, 'subject@example.com', oldPassword)
  const path = `${USERS}/${id}`
  const page = await browser.get(path)
  checkPage(t, page, 'the user\'s page')
  t.match(page.text, /<h1>User “subject@example\.com”<\/h1>/)
  t.match(page.text, /<input type="checkbox" id="set-role-reader" name="roles" value="reader" checked>/, 'the roles held are ticked')
  t.match(page.text, /<input type="checkbox" id="set-role-writer" name="roles" value="writer">/, 'the others are not')

  let answer = await submit(t, path, `${path}/roles`, { roles: ['reader', 'writer'] })
  t.same(noticeOf(answer.page), { role: 'status', text: 'subject@example.com now holds reader, writer.' })
  t.same((await userByEmail('subject@example.com'))?.roles, ['reader', 'writer'], 'identity holds the new roles')
  answer = await submit(t, path, `${path}/roles`, {})
  t.same(noticeOf(answer.page), { role: 'status', text: 'subject@example.com now holds no role.' }, 'nothing ticked: no role')
  t.same((await userByEmail('subject@example.com'))?.roles, [])
  await submit(t, path, `${path}/roles`, { roles: 'reader' })

  const key = await s.createKey(['users:list'], { owner_user_id: id })
  t.equal(await keyStatus(key.key), 200, 'their key works at the gateway')
  const since = performance.now()
  answer = await submit(t, path, `${path}/disable`, {})
  t.same(noticeOf(answer.page), { role: 'status', text: 'subject@example.com is disabled: signed out everywhere, and their API keys are refused.' })
  t.match(answer.page.text, /id="user-status"><span class="status status-disabled">Disabled<\/span>/, 'the page shows them disabled')
  t.match(answer.page.text, /id="enable-user">Enable user</, 'and offers to enable them')
  t.not(await pollUntil(async () => await keyStatus(key.key) === 401, { since, timeoutMs: 1_000 }), null, 'their key is refused at the gateway within a second')
  t.equal((await s.loginAs({ email: 'subject@example.com', password: oldPassword })).status, 401, 'and identity refuses their sign-in')

  answer = await submit(t, path, `${path}/enable`, {})
  t.same(noticeOf(answer.page), { role: 'status', text: 'subject@example.com is enabled again.' })
  t.not(await pollUntil(async () => await keyStatus(key.key) === 200, { timeoutMs: 3_000 }), null, 'their key works again')
  t.equal((await s.loginAs({ email: 'subject@example.com', password: oldPassword })).status, 201, 'and they sign in again')

  const newPassword = 'a brand new password'
  answer = await submit(t, path, `${path}/password`, { password: newPassword })
  t.same(noticeOf(answer.page), { role: 'status', text: 'The password of subject@example.com is changed, and their sessions are ended.' })
  t.notOk(answer.page.text.includes(newPassword) || String(answer.posted.headers.get('location')).includes(newPassword), 'the new password is in no page and no URL')
  t.equal((await s.loginAs({ email: 'subject@example.com', password: oldPassword })).status, 401, 'the old password is refused')
  t.equal((await s.loginAs({ email: 'subject@example.com', password: newPassword })).status, 201, 'the new one works')
  answer = await submit(t, path, `${path}/password`, { password: '' })
  t.same(noticeOf(answer.page), { role: 'alert', text: 'Type the new password. Nothing was changed.' }, 'an empty password is not sent')

  t.equal((await browser.get(`${USERS}/nobody`)).status, 404, 'an unknown user: 404')
  t.equal((await browser.get(`${USERS}/${encodeURIComponent('no body!')}`)).status, 404, 'a malformed id: 404')
  t.equal((await browser.post(`${USERS}/nobody/disable`, { _csrf: csrfOf(page) })).status, 404, 'a form for an unknown user: 404')
})

t.test('roles: created, their permissions, key lifetime and policies changed, deleted once named', async (t) => {
  const page = await browser.get(ROLES)
  checkPage(t, page, 'Roles')
  t.match(page.text, /<th scope="row"><a href="\/console\/operator\/roles\/reader">reader<\/a><\/th>\s*<td><code>users:list<\/code><\/td>\s*<td><span class="detail">none<\/span><\/td>\s*<td>the default<\/td>/, 'a role, its permissions, policies and key lifetime')

  const role = '/console/operator/roles/auditors'
  let answer = await submit(t, ROLES, ROLES, { name: 'auditors', permissions: 'users:list\r\ntasks:read\r\n', key_max_lifetime_days: '30' }, role)
  t.same(noticeOf(answer.page), { role: 'status', text: 'Role auditors is created.' })
  checkPage(t, answer.page, 'the role\'s page')
  t.same((await roleOf('auditors')).role.permissions.sort(), ['tasks:read', 'users:list'], 'one permission a line')
  t.equal((await roleOf('auditors')).role.key_max_lifetime_days, 30, 'the key lifetime')

  const again = await browser.post(ROLES, { _csrf: csrfOf(page), name: 'auditors', permissions: '*' })
  t.equal(again.status, 409, 'creating a role of an existing name is refused')
  t.equal(noticeOf(again)?.text, 'A role named auditors already exists: change it on its own page. Nothing was changed.')
  t.match(again.text, /<textarea id="new-permissions"[^>]*>\*<\/textarea>/, 'what was typed is kept')
  t.same((await roleOf('auditors')).role.permissions.sort(), ['tasks:read', 'users:list'], 'and the role is unchanged')

  answer = await submit(t, role, role, { permissions: 'tasks:*', key_max_lifetime_days: '' })
  t.same(noticeOf(answer.page), { role: 'status', text: 'Role auditors: its permissions and key lifetime are saved.' })
  t.same((await roleOf('auditors')).role.permissions, ['tasks:*'], 'the permissions are replaced')
  t.equal((await roleOf('auditors')).role.key_max_lifetime_days, null, 'an empty key lifetime: the default')
  t.match(answer.page.text, /<textarea id="edit-permissions"[^>]*>tasks:\*<\/textarea>/, 'the form shows them')

  const burst = '[{"name":"burst","kind":"rate","limit":10,"window_seconds":60,"partition":"key"}]'
  answer = await submit(t, role, `${role}/policies`, { policies: burst }, role)
  t.same(noticeOf(answer.page), { role: 'status', text: 'Role auditors: its traffic policies are saved.' })
  t.same((await roleOf('auditors')).role.policies, JSON.parse(burst), 'identity holds the policy')
  t.match(answer.page.text, /<li>burst: 10 per 60 s per key<\/li>/, 'the page sums it up')
  t.same((await roleOf('auditors')).role.permissions, ['tasks:*'], 'and the permissions are kept')

  const csrf = csrfOf(answer.page)
  const broken = await browser.post(`${role}/policies`, { _csrf: csrf, policies: '[{"name": "burst",' })
  t.equal(broken.status, 400, 'JSON that does not parse is refused')
  t.match(noticeOf(broken)?.text, /^The policies are not valid JSON \(.+\)\. Nothing was changed\.$/)
  t.ok(broken.text.includes('>[{&quot;name&quot;: &quot;burst&quot;,</textarea>'), 'what was typed is kept')
  const invalid = await browser.post(`${role}/policies`, { _csrf: csrf, policies: '[{"name":"burst","kind":"rate","limit":0,"window_seconds":60,"partition":"key"}]' })
  t.equal(invalid.status, 400, 'a policy identity refuses')
  t.match(noticeOf(invalid)?.text, /limit/, 'identity\'s reason is shown')
  t.same((await roleOf('auditors')).role.policies, JSON.parse(burst), 'the policies are unchanged')
  const lifetime = await browser.post(role, { _csrf: csrf, permissions: 'users:list', key_max_lifetime_days: 'soon' })
  t.equal(lifetime.status, 400, 'a key lifetime that is no number')
  t.same((await roleOf('auditors')).role.permissions, ['tasks:*'], 'changes nothing')

  const wrongName = await browser.post(`${role}/delete`, { _csrf: csrf, confirm_name: 'auditor' })
  t.equal(wrongName.status, 400, 'delete without the exact name')
  t.equal(noticeOf(wrongName)?.text, 'Type the role\'s name, auditors, exactly to delete it. Nothing was deleted.')
  t.equal((await roleOf('auditors')).status, 200, 'the role is still there')
  const held = await browser.post('/console/operator/roles/reader/delete', { _csrf: csrf, confirm_name: 'reader' })
  t.equal(held.status, 409, 'a role users hold is not deleted')
  t.equal(noticeOf(held)?.text, 'Role reader is still assigned to users.', 'identity\'s reason')
  answer = await submit(t, role, `${role}/delete`, { confirm_name: 'auditors' }, ROLES)
  t.same(noticeOf(answer.page), { role: 'status', text: 'Role auditors is deleted.' })
  t.equal((await roleOf('auditors')).status, 404, 'the role is gone')

  t.equal((await browser.get(role)).status, 404, 'a deleted role\'s page: 404')
  t.equal((await browser.get(`${ROLES}/NOT-A-NAME`)).status, 404, 'a malformed name: 404')
  t.equal((await browser.post(role, { _csrf: csrf, permissions: 'tasks:read' })).status, 404, 'a stale tab of a deleted role does not create it again')
  t.equal((await roleOf('auditors')).status, 404)
})

t.test('identity\'s refusals are shown and change nothing', async (t) => {
  t.equal((await s.admin('PUT', '/admin/roles/superuser', { permissions: ['admin:*'] })).status, 200, 'a role with admin:*')
  const id = await newUser(t, 'refused@example.com', 'refused password')
  const path = `${USERS}/${id}`
  const notHeld = 'You do not hold admin:*, so you cannot give it: not to a key, a role or a user.'
  const { page } = await submit(t, path, `${path}/roles`, { roles: ['reader', 'superuser'] })
  t.same(noticeOf(page), { role: 'alert', text: notHeld }, 'granting admin:* that the operator lacks: identity\'s 403, shown')
  t.same((await userByEmail('refused@example.com'))?.roles, ['reader'], 'the roles are unchanged')
  const created = await submit(t, USERS, USERS, { email: 'overreach@example.com', password: 'overreach password', roles: 'superuser' })
  t.same(noticeOf(created.page), { role: 'alert', text: notHeld }, 'creating a user with it is refused too')
  t.equal(await userByEmail('overreach@example.com'), undefined, 'and nobody is created')
  const widened = await browser.post(`${ROLES}/reader`, { _csrf: csrfOf(page), permissions: 'users:list\nadmin:keys' })
  t.equal(widened.status, 403, 'putting admin:keys into a role')
  t.equal(noticeOf(widened)?.text, 'You do not hold admin:keys, so you cannot give it: not to a key, a role or a user.')
  t.same((await roleOf('reader')).role.permissions, ['users:list'], 'the role is unchanged')
})

t.test('forged and cross-site forms change nothing', async (t) => {
  const id = await newUser(t, 'forged@example.com', 'forged password')
  const csrf = csrfOf(await browser.get(USERS))
  const refusals: Array<[string, Record<string, string>, Record<string, string>]> = [
    ['Sec-Fetch-Site: cross-site', { _csrf: csrf }, { 'sec-fetch-site': 'cross-site' }],
    ['an Origin of another site', { _csrf: csrf }, { origin: 'https://evil.example' }],
    ['no CSRF token', {}, {}],
    ['a wrong CSRF token', { _csrf: `${csrf.slice(0, -2)}xx` }, {}]
  ]
  const forms: Array<[string, Record<string, string>]> = [
    [USERS, { email: 'forged-new@example.com', password: 'forged password', roles: 'reader' }],
    [`${USERS}/${id}/disable`, {}],
    [`${USERS}/${id}/roles`, { roles: 'writer' }],
    [`${ROLES}/reader`, { permissions: 'tasks:*' }],
    [`${ROLES}/writer/delete`, { confirm_name: 'writer' }]
  ]
  for (const [path, form] of forms) {
    for (const [what, token, headers] of refusals) {
      const answer = await browser.post(path, { ...form, ...token }, headers)
      t.equal(answer.status, 403, `${path}, ${what}: refused`)
      t.match(answer.text, /Request refused/, `${path}, ${what}: an HTML refusal`)
    }
  }
  t.equal(await userByEmail('forged-new@example.com'), undefined, 'nobody is created')
  t.same(await userByEmail('forged@example.com'), { id, roles: ['reader'], status: 'active' }, 'the user is neither disabled nor given roles')
  t.same((await roleOf('reader')).role.permissions, ['users:list'], 'the role is unchanged')
  t.equal((await roleOf('writer')).status, 200, 'and the other is not deleted')
})

t.test('the pages are closed to users without their operator permission', async (t) => {
  const plain = await signedIn(t, s.user.email, s.user.password)
  const keys = await plain.get('/console/keys')
  t.notMatch(keys.text, /href="\/console\/operator\/(users|roles)"/, 'a plain user sees no Users or Roles link')
  const csrf = csrfOf(keys)
  for (const path of [USERS, ROLES, `${ROLES}/reader`, `${USERS}/${operator.userId}`]) {
    const answer = await plain.get(path)
    t.equal(answer.status, 403, `${path}: 403 for a plain user`)
    t.match(answer.text, /Not permitted/)
  }
  t.equal((await plain.post(`${USERS}/${operator.userId}/disable`, { _csrf: csrf })).status, 403, 'and a form of theirs is refused')
  t.equal((await userByEmail(operator.email))?.status, 'active', 'changing nothing')

  const usersOnly = await makeOperator(t, s, ['admin:users'], 'users-only')
  const limited = await signedIn(t, usersOnly.email, usersOnly.password)
  const page = await limited.get(USERS)
  t.equal(page.status, 200, 'admin:users alone opens Users')
  t.match(page.text, /<a href="\/console\/operator\/users">Users<\/a>/)
  t.notMatch(page.text, /href="\/console\/operator\/roles"/, 'not the Roles link')
  t.match(page.text, /<input id="new-roles" name="roles_text" value=""/, 'roles are typed by name, as roles cannot be listed without admin:roles')
  t.equal((await limited.get(ROLES)).status, 403, 'and the Roles page is refused')
  t.equal((await limited.post(`${ROLES}/reader`, { _csrf: csrfOf(page), permissions: 'tasks:*' })).status, 403, 'so is a role form')
  const typed = await limited.post(USERS, { _csrf: csrfOf(page), email: 'typed@example.com', password: 'typed password', roles_text: 'reader, writer' })
  t.equal(typed.status, 303)
  t.same((await userByEmail('typed@example.com'))?.roles, ['reader', 'writer'], 'a user created with typed role names')
})

t.test('the audit trail names the operator, not a shared token', async (t) => {
  const answer = await s.admin('GET', `/admin/audit?action=user.disable&actor_id=${operator.userId}`)
  t.equal(answer.status, 200)
  const records = answer.body.records as Array<{ actor: { type: string, id: string }, outcome: string }>
  t.ok(records.length >= 1, 'the disabling made from the console is recorded')
  t.same(records[0]?.actor, { type: 'user', id: operator.userId }, 'with the operator as its actor')
  t.equal(records[0]?.outcome, 'success')
})
