import t from 'tap'
import type { Test } from 'tap'
import { parseKeyFilters, keysPathOf } from '../../console/operator/key-filters.js'
import { coversOwner, disabledOwnersKeys, overPrivilegedKeys, shortKeyName, type AdminKey, type KeyOwner } from '../../console/operator/key-hygiene.js'
import { CONTENT_SECURITY_POLICY } from '../../console/security.js'
import { assertStatus } from '../helpers/assert.js'
import { Browser, csrfOf, startConsoleStack, type PageAnswer } from '../helpers/console.js'
import { pollUntil } from '../helpers/gateway-auth.js'
import type { Stack, TestGateway } from '../helpers/gateway.js'
import { http } from '../helpers/http.js'
import { makeOperator } from '../helpers/operators.js'

/**
 * The operator pages All keys and Overview through the gateway, against a real
 * identity: every filter narrowing the table as identity's key hygiene queries do, a
 * filter the console cannot read (or identity refuses) listing nothing, revoking a key
 * (refused at the gateway within a second, the operator named in the audit trail), the
 * Overview's four numbers against seeded keys and owners, and the refusals: users
 * without admin:keys, forms from another site or without the CSRF token.
 */

const DAY_MS = 86_400_000
const KEYS = '/console/operator/keys'
const OVERVIEW = '/console/operator'

t.test('the rules on their own', async (t) => {
  t.ok(coversOwner(['users:*'], ['users:list', 'users:read']), 'a resource wildcard covers each of its actions')
  t.ok(coversOwner(['*'], ['users:list', 'tasks:write']), '* covers everything')
  t.ok(coversOwner(['users:list'], ['users:list', 'admin:keys', 'admin:*']), 'the owner\'s operator permissions are left out')
  t.notOk(coversOwner(['users:list'], ['users:list', 'users:read']), 'one permission short is not covering')
  t.notOk(coversOwner(['users:read'], ['users:*']), 'an action does not cover its wildcard')
  t.notOk(coversOwner(['users:*'], ['*']), 'a resource wildcard does not cover *')
  t.notOk(coversOwner(['users:list'], ['admin:keys']), 'an owner holding only operator permissions lends a key nothing')
  t.notOk(coversOwner(['users:list'], []), 'nor does an owner holding nothing')

  const owner = (id: string, status: KeyOwner['status'], permissions: string[]): KeyOwner => ({ id, email: `${id}@example.com`, status, permissions })
  const owners = new Map([['usr_a', owner('usr_a', 'active', ['users:list'])], ['usr_d', owner('usr_d', 'disabled', ['users:list'])]])
  const unused = { origin: 'admin', key_prefix: 'pk_x', key_last4: null, expires_at: null, created_at: '', last_used_at: null, last_used_route: null, last_used_ip: null, rotation: null, disabled_at: null, revoked_at: null }
  const key = (name: string, ownerId: string | null, status: AdminKey['status'] = 'active', permissions = ['users:list']): AdminKey =>
    ({ ...unused, id: `key_${name}`, name, owner_user_id: ownerId, status, permissions })
  const keys = [key('a1', 'usr_a'), key('a2', 'usr_a', 'revoked'), key('a3', 'usr_a', 'active', ['users:read']), key('d1', 'usr_d'), key('d2', 'usr_d', 'disabled'),
    key('gone', 'usr_gone'), key('none', null)]
  t.same(overPrivilegedKeys(keys, owners).map((k) => k.name), ['a1'], 'over-privileged: active, owner active and covered; not revoked, not narrower, not a disabled owner\'s')
  t.same(disabledOwnersKeys(keys, owners), { held: 2, usable: 0 }, 'active keys of a disabled or unknown owner: held, none usable')
  t.same(disabledOwnersKeys([key('a1', 'usr_a')], owners), { held: 0, usable: 0 }, 'an active owner\'s key is not counted')
  t.equal(shortKeyName({ name: 'usr_a/mine', owner_user_id: 'usr_a' }), 'mine', 'the owner\'s namespace is left out')
  t.equal(shortKeyName({ name: 'usr_b/theirs', owner_user_id: 'usr_a' }), 'usr_b/theirs', 'another namespace is kept')
  t.equal(shortKeyName({ name: 'usr_a/x', owner_user_id: null }), 'usr_a/x', 'a key without an owner keeps its name')

  const parsed = parseKeyFilters(new URLSearchParams('owner=&status=active&expiring_within_days=7&idle_days=&never_expires=true'))
  t.same(parsed.ok && parsed.filters, { status: 'active', expiring_within_days: 7, never_expires: true }, 'empty fields are no filter')
  t.equal(keysPathOf({ never_expires: true, status: 'active' }), `${KEYS}?status=active&never_expires=true`, 'one order, whatever the input\'s')
  for (const [query, field] of [['idle_days=0', 'idle_days'], ['idle_days=7.5', 'idle_days'], ['expiring_within_days=-1', 'expiring_within_days'],
    ['status=sleeping', 'status'], ['owner=a%26b', 'owner'], ['never_expires=yes', 'never_expires'], ['status=active&status=revoked', 'status'], ['colour=red', null]] as const) {
    const refused = parseKeyFilters(new URLSearchParams(query))
    t.same(refused.ok ? null : refused.errors.map((e) => e.name), [field], `${query} is refused, naming ${field ?? 'no field'}`)
  }
})

interface Seeded {
  s: Stack
  gateway: TestGateway
  ids: Record<string, string>
  secrets: Record<string, string>
  owners: { ann: string, bob: string, carol: string }
  operator: { userId: string, browser: Browser }
}

async function signIn (t: Test, gateway: TestGateway, email: string, password: string): Promise<Browser> {
  const browser = new Browser(gateway.url)
  const form = await browser.get('/console/sign-in')
  t.equal((await browser.post('/console/sign-in', { _csrf: csrfOf(form), email, password })).status, 303, `${email} signs in`)
  return browser
}

/**
 * Owners Ann (users:list, users:read), Bob (users:list, disabled at the end), Carol
 * (users:list and an operator permission); two keys made 91 days ago and never used
 * since, the rest now, and one key ADA made for herself through /me/keys.
 */
async function seed (t: Test): Promise<Seeded> {
  const { s, gateway } = await startConsoleStack(t)
  const ids: Record<string, string> = {}
  const secrets: Record<string, string> = {}
  const role = async (name: string, permissions: string[]): Promise<void> => assertStatus(t, await s.admin('PUT', `/admin/roles/${name}`, { permissions }), 200, `role ${name}`)
  const user = async (email: string, roles: string[]): Promise<string> => {
    const created = await s.admin('POST', '/admin/users', { email, password: `${email} password`, roles })
    assertStatus(t, created, 201, `user ${email}`)
    return created.body.user.id as string
  }
  const key = async (name: string, options: { owner?: string, days: number | null, permissions?: string[] }): Promise<void> => {
    const created = await s.admin('POST', '/admin/keys', {
      name,
      permissions: options.permissions ?? ['users:list'],
      expires_at: options.days === null ? null : new Date(s.clock.now() + options.days * DAY_MS).toISOString(),
      owner_user_id: options.owner ?? null
    })
    assertStatus(t, created, 201, `key ${name}`)
    ids[name] = created.body.api_key.id as string
    secrets[name] = created.body.key as string
  }
  await role('ann-role', ['users:list', 'users:read'])
  await role('bob-role', ['users:list'])
  await role('carol-role', ['users:list', 'admin:audit'])
  const owners = { ann: await user('ann@example.com', ['ann-role']), bob: await user('bob@example.com', ['bob-role']), carol: await user('carol@example.com', ['carol-role']) }

  await key('idle-old', { days: 300 })
  await key('ann-wide', { owner: owners.ann, days: null, permissions: ['users:*'] })
  s.clock.advance(91 * DAY_MS)
  await key('ann-narrow', { owner: owners.ann, days: 200 })
  await key('bob-key', { owner: owners.bob, days: 200 })
  await key('carol-key', { owner: owners.carol, days: 200 })
  await key('forever', { days: null })
  await key('soon', { days: 5 })
  await key('gone', { owner: owners.bob, days: 200 })
  await key('paused', { days: 200 })
  await key('target', { days: 30 })
  assertStatus(t, await s.admin('POST', `/admin/keys/${ids.gone as string}/revoke`), 200, 'gone revoked')
  assertStatus(t, await s.admin('POST', `/admin/keys/${ids.paused as string}/disable`), 200, 'paused disabled')
  const ada = await s.login()
  const mine = await http(`${s.publicUrl}/me/keys`, {
    bearer: ada.access_token,
    body: { name: 'mine', permissions: ['users:list'], expires_at: new Date(s.clock.now() + 30 * DAY_MS).toISOString() }
  })
  assertStatus(t, mine, 201, 'ADA makes a key of her own')
  ids.mine = mine.body.api_key.id as string
  assertStatus(t, await s.admin('POST', `/admin/users/${owners.bob}/disable`), 200, 'Bob disabled')

  const made = await makeOperator(t, s, ['admin:keys', 'admin:users'], 'keys-operator')
  return { s, gateway, ids, secrets, owners, operator: { userId: made.userId, browser: await signIn(t, gateway, made.email, made.password) } }
}

/** The names in the All keys table, sorted. */
function namesOf (page: PageAnswer): string[] {
  const body = /<table id="all-keys">[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/.exec(page.text)?.[1] ?? ''
  return [...body.matchAll(/<th scope="row">([^<]*)<\/th>/g)].map((m) => m[1] as string).sort()
}

const countOf = (page: PageAnswer, card: string): string | undefined => new RegExp(`id="${card}-count">([^<]*)<`).exec(page.text)?.[1]

function checkPage (t: Test, page: PageAnswer, what: string): void {
  t.equal(page.headers.get('content-security-policy'), CONTENT_SECURITY_POLICY, `${what}: the CSP`)
  t.equal(page.headers.get('cache-control'), 'no-store', `${what}: never cached`)
  t.notMatch(page.text, /<script>|<style>|style="|\son[a-z]+="/i, `${what}: no inline script or style`)
  t.equal(page.text.match(/<h1>/g)?.length, 1, `${what}: one h1`)
}

const gatewayStatus = async (gateway: TestGateway, secret: string): Promise<number> =>
  (await gateway.call('/users?per_page=1', { headers: { 'x-api-key': secret } })).status

const keyStatusAt = async (s: Stack, id: string): Promise<string> => (await s.admin('GET', `/admin/keys/${id}`)).body.api_key.status as string

t.test('All keys and Overview', async (t) => {
  const seeded = await seed(t)
  const { s, gateway, ids, secrets, owners } = seeded
  const operator = seeded.operator.browser

  t.test('the table: every key, names without the owner\'s namespace, owners by e-mail', async (t) => {
    const page = await operator.get(KEYS)
    t.equal(page.status, 200, 'All keys')
    checkPage(t, page, 'All keys')
    t.match(page.text, /<a href="\/console\/operator\/keys">All keys<\/a>/, 'in the operator navigation')
    t.match(page.text, /<a href="\/console\/operator">Overview<\/a>/, 'beside the Overview')
    t.same(namesOf(page), ['ann-narrow', 'ann-wide', 'bob-key', 'carol-key', 'forever', 'gone', 'idle-old', 'mine', 'paused', 'soon', 'target'], 'every key')
    t.notMatch(page.text, /<th scope="row">usr_/, 'no name shows its owner\'s namespace')
    t.match(page.text, /<th scope="row">mine<\/th>\s*<td>[^<]*example\.com<\/td>/, 'ADA\'s own key: its name, her e-mail as owner')
    t.match(page.text, /<th scope="row">bob-key<\/th>\s*<td>bob@example\.com<span class="detail">disabled: the key is refused<\/span><\/td>/, 'a disabled owner said so')
    t.match(page.text, /<th scope="row">forever<\/th>\s*<td><span class="detail">no owner<\/span><\/td>/, 'a key without an owner')
    t.match(page.text, /<th scope="row">gone<\/th>[\s\S]*?status-revoked">Revoked<\/span><\/td>\s*<td><\/td>/, 'a revoked key: its status, no button')
    t.match(page.text, new RegExp(`<button type="submit" class="danger" id="revoke-${ids.target as string}" aria-label="Revoke the key target">Revoke</button>`), 'an active key\'s Revoke, named')
    t.match(page.text, /aria-label="Revoke the key ann-wide of ann@example\.com"/, 'whose owner is named too')
    t.notOk(Object.values(secrets).some((secret) => page.text.includes(secret)), 'never a secret')
    t.match(page.text, /<select id="owner" name="owner">\s*<option value="">Any owner<\/option>\s*<option value="usr_[^"]+">ada/, 'owners picked by e-mail')
    t.match(page.text, /<option value="[^"]+">bob@example\.com \(disabled\)<\/option>/, 'a disabled owner marked in the list')
  })

  t.test('each filter narrows the table as identity filters', async (t) => {
    const cases: Array<[string, string[]]> = [
      [`owner=${owners.ann}`, ['ann-narrow', 'ann-wide']],
      ['status=revoked', ['gone']],
      ['status=disabled', ['paused']],
      ['status=active', ['ann-narrow', 'ann-wide', 'bob-key', 'carol-key', 'forever', 'idle-old', 'mine', 'soon', 'target']],
      ['expiring_within_days=7', ['soon']],
      ['idle_days=90', ['ann-wide', 'idle-old']],
      ['never_expires=true', ['ann-wide', 'forever']],
      [`owner=${owners.bob}&status=active`, ['bob-key']],
      // The GET form sends its empty fields: they filter nothing.
      ['owner=&status=active&expiring_within_days=40&idle_days=&never_expires=', ['mine', 'soon', 'target']]
    ]
    for (const [query, expected] of cases) {
      const page = await operator.get(`${KEYS}?${query}`)
      t.equal(page.status, 200, query)
      t.same(namesOf(page), expected, `${query}: ${expected.join(', ')}`)
    }
    const chosen = await operator.get(`${KEYS}?owner=${owners.ann}&status=active&idle_days=90&never_expires=true`)
    t.same(namesOf(chosen), ['ann-wide'], 'filters together')
    t.match(chosen.text, new RegExp(`<option value="${owners.ann}" selected>ann@example\\.com</option>`), 'the form shows the owner chosen')
    t.match(chosen.text, /<option value="active" selected>Active<\/option>/, 'the status')
    t.match(chosen.text, /id="idle" name="idle_days"[^>]* value="90"/, 'the days')
    t.match(chosen.text, /id="never-expires" name="never_expires" value="true" checked/, 'the box ticked')
    t.match(chosen.text, /<caption>API keys matching the filters: 1 /, 'the caption says the list is filtered')
    const none = await operator.get(`${KEYS}?owner=usr_nobody`)
    t.match(none.text, /<p id="no-keys">No key matches these filters\.<\/p>/, 'no match, said')
  })

  t.test('a filter that cannot be read lists nothing and says why', async (t) => {
    const cases: Array<[string, RegExp, string | null]> = [
      ['idle_days=abc', /Idle for: &quot;abc&quot; is not a number of days/, 'idle'],
      ['expiring_within_days=0', /Expiring within: &quot;0&quot; is not a number of days/, 'expiring'],
      ['status=sleeping', /Status: &quot;sleeping&quot; is not one of active, disabled, revoked, expired, rotating\./, 'status'],
      ['colour=red', /&quot;colour&quot; is not a filter of this page/, null],
      ['status=active&status=revoked', /The filter status is given twice/, 'status'],
      // The console takes any whole number; identity says how many days it takes.
      ['idle_days=99999', /Identity refused these filters: [^<]*idle_days[^<]*36500/, null]
    ]
    for (const [query, message, field] of cases) {
      const page = await operator.get(`${KEYS}?${query}`)
      t.equal(page.status, 400, `${query}: 400`)
      t.match(page.text, /<div class="alert" role="alert" id="filters-error">/, `${query}: an alert`)
      t.match(page.text, message, `${query}: saying what is wrong`)
      t.match(page.text, /No keys are shown until the filters are corrected\./, `${query}: and that nothing is listed`)
      t.notMatch(page.text, /<table id="all-keys">/, `${query}: no table, filtered or not`)
      if (field !== null) t.match(page.text, new RegExp(`id="${field}"[^>]* aria-describedby="filters-error" aria-invalid="true"`), `${query}: the field points at the alert`)
    }
    const typed = await operator.get(`${KEYS}?idle_days=abc&status=revoked`)
    t.match(typed.text, /<option value="revoked" selected>/, 'the form keeps what was sent')
  })

  t.test('the Overview: four numbers from the data, each linked to its keys', async (t) => {
    const page = await operator.get(OVERVIEW)
    t.equal(page.status, 200, 'Overview')
    checkPage(t, page, 'Overview')
    t.equal(countOf(page, 'never-expiring'), '2', 'never expiring: ann-wide, forever')
    t.equal(countOf(page, 'idle'), '2', 'idle 90 days: idle-old, ann-wide')
    t.equal(countOf(page, 'over-privileged'), '3', 'over-privileged: ann-wide (users:*), carol-key (her admin:audit left out), ADA\'s own')
    t.match(page.text, /<li><a href="\/console\/operator\/keys\?owner=usr_[^"]+&amp;status=active">ann-wide<\/a> <span class="detail">of ann@example\.com<\/span><\/li>/, 'each named, linked to its owner\'s keys')
    t.notMatch(page.text, />ann-narrow</, 'not a key narrower than its owner')
    t.notMatch(page.text, />bob-key</, 'nor a disabled owner\'s key, which does nothing')
    t.equal(countOf(page, 'disabled-owners'), '0', 'no key of a disabled owner can be used')
    t.match(page.text, /keys of disabled owners can be used: identity refuses a disabled owner's keys at use/, 'and why')
    t.match(page.text, /<p id="disabled-owners-held">1 key held by disabled owners is refused\.<\/p>/, 'Bob\'s active key, not his revoked one')

    for (const [card, path] of [['that never expire', `${KEYS}?status=active&never_expires=true`], ['idle for 90 days', `${KEYS}?status=active&idle_days=90`]] as const) {
      const link = new RegExp(`<a href="([^"]+)">Show the 2 keys ${card}</a>`).exec(page.text)?.[1]?.replaceAll('&amp;', '&')
      t.equal(link, path, `${card}: linked to All keys so filtered`)
      t.equal(namesOf(await operator.get(link ?? '')).length, 2, `${card}: which lists the same number`)
    }
  })

  t.test('revoking from the page: the gateway refuses the key within 1 s, the operator is in the audit trail', async (t) => {
    t.equal(await gatewayStatus(gateway, secrets.target as string), 200, 'the key works')
    const filters = 'status=active&expiring_within_days=40'
    const page = await operator.get(`${KEYS}?${filters}`)
    t.match(page.text, new RegExp(`<form method="post" action="/console/operator/keys/${ids.target as string}/revoke">\\s*<input type="hidden" name="_csrf" value="[^"]+">\\s*<input type="hidden" name="filters" value="status=active&amp;expiring_within_days=40">`),
      'the form carries the filters')
    const since = performance.now()
    const revoked = await operator.post(`${KEYS}/${ids.target as string}/revoke`, { _csrf: csrfOf(page), filters })
    t.equal(revoked.status, 303, 'post, then redirect')
    t.equal(revoked.headers.get('location'), `${KEYS}?${filters}`, 'back to the same filters')
    const refusedIn = await pollUntil(async () => await gatewayStatus(gateway, secrets.target as string) === 401, { since, timeoutMs: 1_000, intervalMs: 20 })
    t.ok(refusedIn !== null, `the gateway refuses the key within 1 s (${String(refusedIn)} ms)`)

    const back = await operator.get(revoked.headers.get('location') ?? '')
    t.match(back.text, /<div class="notice" role="status" id="operator-status"><p>The key target is revoked: every gateway refuses it within a second\.<\/p>/, 'said once')
    t.same(namesOf(back), ['mine', 'soon'], 'the filtered list without it')
    t.notMatch((await operator.get(`${KEYS}?${filters}`)).text, /role="status"/, 'a reload says nothing again')

    const audit = await s.admin('GET', `/admin/audit?action=key.revoke&target_id=${ids.target as string}`)
    t.equal(audit.body.records.length, 1, 'one revocation in the audit trail')
    t.same(audit.body.records[0]?.actor, { type: 'user', id: seeded.operator.userId }, 'naming the operator as the actor')
  })

  t.test('refused forms revoke nothing', async (t) => {
    const page = await operator.get(KEYS)
    const csrf = csrfOf(page)
    const path = `${KEYS}/${ids.forever as string}/revoke`
    const crossSite = await operator.post(path, { _csrf: csrf, filters: '' }, { 'sec-fetch-site': 'cross-site' })
    t.equal(crossSite.status, 403, 'a cross-site post is refused')
    t.match(crossSite.text, /Nothing was changed/)
    const otherOrigin = await operator.post(path, { _csrf: csrf, filters: '' }, { origin: 'https://evil.example', 'sec-fetch-site': '' })
    t.equal(otherOrigin.status, 403, 'another origin is refused')
    const noToken = await operator.post(path, { filters: '' })
    t.equal(noToken.status, 403, 'a post without the CSRF token is refused')
    t.match(noToken.text, /CSRF token missing or wrong/)
    const smuggled = await operator.post(path, { _csrf: csrf, filters: 'status=active&next=https://evil.example' })
    t.equal(smuggled.status, 303, 'filters the page does not make')
    t.equal(smuggled.headers.get('location'), KEYS, 'come back to the plain list')
    t.match((await operator.get(KEYS)).text, /role="alert" id="form-error"><p>The form carried filters this page does not make\. Nothing was revoked\.<\/p>/, 'saying nothing was revoked')
    t.equal(await keyStatusAt(s, ids.forever as string), 'active', 'the key is still active')
    t.equal(await gatewayStatus(gateway, secrets.forever as string), 200, 'and works at the gateway')
  })

  t.test('without admin:keys: 403 on both pages, no link, nothing revoked', async (t) => {
    const user = await signIn(t, gateway, s.user.email, s.user.password)
    const mine = await user.get('/console/keys')
    t.equal(mine.status, 200, 'a plain user\'s own keys')
    t.notMatch(mine.text, /href="\/console\/operator/, 'no link to an operator page')
    for (const path of [KEYS, OVERVIEW]) {
      const refused = await user.get(path)
      t.equal(refused.status, 403, `${path}: 403 for a plain user`)
      t.match(refused.text, /holding <code>admin:keys<\/code>, which your roles do not grant/, 'naming the permission')
    }
    const forged = await user.post(`${KEYS}/${ids.forever as string}/revoke`, { _csrf: csrfOf(mine), filters: '' })
    t.equal(forged.status, 403, 'a plain user\'s revoke is refused')

    const usersOnly = await makeOperator(t, s, ['admin:users'], 'users-only-operator')
    const other = await signIn(t, gateway, usersOnly.email, usersOnly.password)
    for (const path of [KEYS, OVERVIEW]) t.equal((await other.get(path)).status, 403, `${path}: 403 for an operator holding admin:users only`)
    const theirs = await other.get('/console/keys')
    t.notMatch(theirs.text, /href="\/console\/operator(?:\/keys)?"/, 'who sees neither link')
    t.equal((await other.post(`${KEYS}/${ids.forever as string}/revoke`, { _csrf: csrfOf(theirs), filters: '' })).status, 403, 'nor may revoke')
    t.equal(await keyStatusAt(s, ids.forever as string), 'active', 'the key is still active')
  })

  t.test('admin:keys without admin:users: owners by id, the owner-based cards say what they need', async (t) => {
    const keysOnly = await makeOperator(t, s, ['admin:keys'], 'keys-only-operator')
    const browser = await signIn(t, gateway, keysOnly.email, keysOnly.password)
    const page = await browser.get(`${KEYS}?owner=${owners.ann}`)
    t.equal(page.status, 200, 'All keys')
    t.match(page.text, new RegExp(`<label for="owner">Owner's user id</label>\\s*<input id="owner" name="owner" value="${owners.ann}"`), 'the owner typed as an id')
    t.same(namesOf(page), ['ann-narrow', 'ann-wide'], 'which filters as well')
    t.match(page.text, new RegExp(`<td><code>${owners.ann}</code></td>`), 'owners shown by id')
    const overview = await browser.get(OVERVIEW)
    t.equal(overview.status, 200, 'the Overview')
    t.equal(countOf(overview, 'never-expiring'), '2', 'the key filters\' numbers')
    t.equal(countOf(overview, 'idle'), '2')
    t.equal(countOf(overview, 'over-privileged'), 'needs admin:users', 'no number without the owners\' permissions')
    t.equal(countOf(overview, 'disabled-owners'), 'needs admin:users', 'nor without their status')
  })
})
