import t from 'tap'
import type { Test } from 'tap'
import Database from 'better-sqlite3'
import { Browser, csrfOf, startConsole, startConsoleStack, type PageAnswer } from '../helpers/console.js'
import { makeOperator } from '../helpers/operators.js'
import { assertStatus } from '../helpers/assert.js'

/**
 * The operator's Audit page through the gateway, against a real identity and its
 * SQLite file: the chain's verification as identity gives it (intact, broken where a
 * row was edited by hand, or not verifiable), filters and paging that list what
 * identity lists, the export streamed through byte for byte as identity's NDJSON, and
 * no way in for a user without admin:audit.
 */

const PAGE = '/console/operator/audit'
const EXPORT = '/console/operator/audit/export'

async function signedIn (t: Test, url: string, account: { email: string, password: string }): Promise<Browser> {
  const browser = new Browser(url)
  const form = await browser.get('/console/sign-in')
  const answer = await browser.post('/console/sign-in', { _csrf: csrfOf(form), email: account.email, password: account.password })
  t.equal(answer.status, 303, `${account.email} signs in`)
  return browser
}

interface Row { seq: number, action: string, text: string }

/** The table's rows: each record's seq (the row header), its action and its whole row's HTML. */
function rowsOf (page: PageAnswer): Row[] {
  const body = /<tbody>([\s\S]*?)<\/tbody>/.exec(page.text)?.[1] ?? ''
  return body.split('<tr>').slice(1).map((text) => ({
    seq: Number(/<th scope="row">(\d+)<\/th>/.exec(text)?.[1]),
    action: /<td><code>([^<]*)<\/code><\/td>/.exec(text)?.[1] ?? '',
    text
  }))
}

/** The banner the chain's verification left: its role and sentence. */
function trailCheckOf (page: PageAnswer): { role: string, text: string } | null {
  const match = /role="(status|alert)" id="trail-check"><p>([^<]*)<\/p>/.exec(page.text)
  return match === null ? null : { role: match[1] as string, text: (match[2] as string).replace(/\s+/g, ' ') }
}

function alertOf (page: PageAnswer): string | null {
  return /<div class="alert" role="alert" id="form-error"><p>([^<]*)<\/p>/.exec(page.text)?.[1] ?? null
}

/** A link's target as the browser reads it from the page (entities decoded). */
function hrefOf (page: PageAnswer, id: string): string | null {
  const href = new RegExp(`<a href="([^"]*)"[^>]* id="${id}"`).exec(page.text)?.[1]
  return href === undefined ? null : href.replaceAll('&amp;', '&')
}

t.test('the Audit page', async (t) => {
  const { s, gateway } = await startConsoleStack(t)
  const auditor = await makeOperator(t, s, ['admin:audit'])
  const usersOnly = await makeOperator(t, s, ['admin:users'])
  // Changes to find in the trail: five users created a minute apart (one action to filter by, times to range over), and a key whose name is markup.
  for (let i = 1; i <= 5; i++) {
    s.clock.advance(60_000)
    assertStatus(t, await s.admin('POST', '/admin/users', { email: `audited-${i}@example.com`, password: `audited password ${i}`, roles: [] }), 201, `user ${i} created`)
  }
  const markupKey = await s.createKey(['users:list'], { name: '<script>alert(1)</script>' })
  const browser = await signedIn(t, gateway.url, auditor)
  const identityPage = async (t: Test, query: string): Promise<Array<Row['seq']>> => {
    const answer = await s.admin('GET', `/admin/audit?${query}`)
    assertStatus(t, answer, 200, `identity lists ?${query}`)
    return (answer.body.records as Array<{ seq: number }>).map((record) => record.seq)
  }

  t.test('the chain intact, as identity counts it, and the newest records', async (t) => {
    const page = await browser.get(PAGE)
    t.equal(page.status, 200)
    t.equal(page.headers.get('cache-control'), 'no-store')
    t.match(page.text, /<a href="\/console\/operator\/audit">Audit<\/a>/, 'Audit is in the operator navigation')
    const verified = await s.admin('GET', '/admin/audit/verify')
    t.equal(verified.body.valid, true)
    t.same(trailCheckOf(page), { role: 'status', text: `The audit trail is intact: ${verified.body.checked as number} records checked.` },
      'the banner says the chain verifies, with identity\'s count')
    t.same(rowsOf(page).map((row) => row.seq), await identityPage(t, 'limit=50'), 'the newest 50 records, as identity lists them')
    const key = rowsOf(page).find((row) => row.action === 'key.create')
    t.ok(key, 'the key\'s creation is listed')
    t.match(key?.text, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/, 'with its name escaped')
    t.notOk(page.text.includes('<script>alert'), 'and never as markup')
    t.notOk(page.text.includes(markupKey.key), 'no key secret on the page')
    t.notOk(page.text.includes('audited password'), 'no password on the page')
    t.match(rowsOf(page).find((row) => row.action === 'user.create')?.text, /email: audited-5@example\.com/, 'a creation\'s changes in short')
    t.equal(hrefOf(page, 'export'), `${EXPORT}`, 'the export of every record')
  })

  t.test('filters narrow the rows as identity\'s query does', async (t) => {
    const created = await browser.get(`${PAGE}?action=user.create&outcome=&actor_type=&from=&to=&order=newest&limit=50`)
    t.equal(created.status, 200, 'the form\'s blank fields are no filter')
    t.same(rowsOf(created).map((row) => row.seq), await identityPage(t, 'action=user.create'), 'the ones identity lists')
    t.same(new Set(rowsOf(created).map((row) => row.action)), new Set(['user.create']), 'only user creations')
    t.equal(rowsOf(created).length, 8, 'the stack\'s user, the two operators and the five users')
    t.match(created.text, /id="filter-action" name="action" value="user\.create"/, 'the form shows the filter')
    t.equal(hrefOf(created, 'export'), `${EXPORT}?action=user.create&order=newest`, 'the export takes the same filters, without the page size')

    const oldest = await browser.get(`${PAGE}?action=user.create&order=oldest`)
    t.same(rowsOf(oldest).map((row) => row.seq), await identityPage(t, 'action=user.create&order=oldest'), 'oldest first')

    const newest = (await s.admin('GET', '/admin/audit?action=user.create&limit=3')).body.records as Array<{ seq: number, at: string }>
    // What a datetime-local field sends: no zone (read as UTC), to the second.
    const fromField = newest[2]?.at.slice(0, 19) as string
    const since = await browser.get(`${PAGE}?action=user.create&from=${encodeURIComponent(fromField)}`)
    t.same(rowsOf(since).map((row) => row.seq), newest.map((record) => record.seq), 'a from field, read as UTC: the last three users, made a minute apart')
    t.match(since.text, new RegExp(`id="filter-from" name="from" value="${fromField}"`), 'the field keeps its value')

    const before2000 = await browser.get(`${PAGE}?to=2000-01-01`)
    t.equal(before2000.status, 200, 'a date alone is its midnight, UTC')
    t.match(before2000.text, /<p id="no-records">No record matches these filters\.<\/p>/, 'and nothing is that old')
  })

  t.test('paging: each page\'s link carries the cursor and the filters', async (t) => {
    const all = await identityPage(t, 'action=user.create')
    const seen: number[] = []
    let path: string | null = `${PAGE}?action=user.create&limit=3`
    let pages = 0
    while (path !== null) {
      const page = await browser.get(path)
      t.equal(page.status, 200, `page ${++pages}`)
      t.ok(rowsOf(page).length <= 3, 'three records a page at most')
      seen.push(...rowsOf(page).map((row) => row.seq))
      if (pages > 1) t.equal(hrefOf(page, 'first-page'), `${PAGE}?action=user.create&limit=3`, 'a way back to the newest')
      path = hrefOf(page, 'next-page')
      if (path !== null) t.match(path, /^\/console\/operator\/audit\?action=user\.create&limit=3&cursor=[^&]+$/, 'the next page: same filters, the cursor')
    }
    t.equal(pages, 3, 'eight records, three pages')
    t.same(seen, all, 'every record once, newest first')
  })

  t.test('the export streams identity\'s NDJSON through', async (t) => {
    for (const query of ['', 'action=user.create&order=oldest']) {
      const exported = await browser.get(`${EXPORT}${query === '' ? '' : `?${query}`}`)
      t.equal(exported.status, 200, `export ?${query}`)
      t.equal(exported.headers.get('content-type'), 'application/x-ndjson')
      const day = new Date(s.clock.now()).toISOString().slice(0, 10)
      t.equal(exported.headers.get('content-disposition'), `attachment; filename="portier-audit-${day}.ndjson"`, 'a download named for the day')
      t.equal(exported.headers.get('cache-control'), 'no-store')
      t.equal(exported.headers.get('content-length'), null, 'streamed, not buffered to count its length')
      const direct = await s.admin('GET', `/admin/audit?format=ndjson${query === '' ? '' : `&${query}`}`)
      t.equal(exported.text, direct.text, 'exactly what identity exports for the same filters')
      const lines = exported.text.trimEnd().split('\n').map((line) => JSON.parse(line) as { seq: number, action: string })
      t.ok(lines.length >= 8, 'every record, one a line, each JSON')
      if (query !== '') t.ok(lines.every((record) => record.action === 'user.create'), 'filtered')
    }

    const extra = await browser.get(`${EXPORT}?action=user.create&format=json&limit=1&cursor=x&admin=1`)
    t.equal(extra.headers.get('content-type'), 'application/x-ndjson', 'format, paging and unknown members are not passed on')
    t.equal(extra.text.trimEnd().split('\n').length, 8, 'every matching record')

    const smuggled = await browser.get(`${EXPORT}?action=${encodeURIComponent('user.create&outcome=failure')}`)
    t.equal(smuggled.status, 400, 'a filter cannot carry another into identity\'s query')
    t.match(smuggled.headers.get('content-type'), /^text\/html/, 'the refusal is a page, not a file')
    t.notOk(smuggled.headers.has('content-disposition'))
    t.match(alertOf(smuggled), /^The audit records could not be exported\. Identity refused the filter Action: querystring\/action must match pattern/, 'saying which filter')
  })

  t.test('a bad filter is identity\'s refusal, said in an alert', async (t) => {
    const bad = await browser.get(`${PAGE}?from=yesterday`)
    t.equal(bad.status, 400)
    t.equal(alertOf(bad), 'Identity refused the filter From (UTC): querystring/from must match format &quot;date-time&quot;', 'naming the field, with identity\'s words')
    t.match(bad.text, /id="filter-from" name="from" value="" aria-describedby="filter-from-hint" aria-invalid="true"/, 'which is marked invalid')
    t.equal(bad.text.match(/aria-invalid/g)?.length, 1, 'and no other')
    t.same(rowsOf(bad), [], 'no records')
    t.notOk(bad.text.includes('id="export"'), 'nor an export of them')
    t.equal(trailCheckOf(bad)?.role, 'status', 'the chain is still verified')

    const reversed = await browser.get(`${PAGE}?from=2030-01-02&to=2030-01-01`)
    t.equal(reversed.status, 400)
    t.equal(alertOf(reversed), 'Identity refused the filter From (UTC): querystring/from must be before to', 'a range that ends before it starts')

    const badExport = await browser.get(`${EXPORT}?outcome=maybe`)
    t.equal(badExport.status, 400, 'an export with a bad filter')
    t.match(badExport.headers.get('content-type'), /^text\/html/, 'is a page')
    t.match(alertOf(badExport), /^The audit records could not be exported\. Identity refused the filter Outcome: querystring\/outcome /)
  })

  t.test('no way in without admin:audit', async (t) => {
    const user = await signedIn(t, gateway.url, s.user)
    const keys = await user.get('/console/keys')
    t.equal(keys.status, 200)
    t.notOk(keys.text.includes(PAGE), 'a plain user has no Audit link')
    for (const [who, visitor] of [['a plain user', user], ['an operator with admin:users only', await signedIn(t, gateway.url, usersOnly)]] as const) {
      const page = await visitor.get(PAGE)
      t.equal(page.status, 403, `${who}: the page is refused`)
      t.match(page.text, /<code>admin:audit<\/code>/, 'naming the permission')
      t.notOk(page.text.includes('trail-check'), 'with nothing of the trail')
      const exported = await visitor.get(`${EXPORT}?action=user.create`)
      t.equal(exported.status, 403, `${who}: the export is refused`)
      t.match(exported.headers.get('content-type'), /^text\/html/, 'as a page')
      t.notOk(exported.text.includes('user.create'), 'with no record')
    }
    const stranger = new Browser(gateway.url)
    t.equal((await stranger.get(PAGE)).headers.get('location'), '/console/sign-in', 'signed out: to the sign-in page')
    t.equal((await stranger.get(EXPORT)).headers.get('location'), '/console/sign-in')
  })

  t.test('when identity cannot verify, the page never says intact', async (t) => {
    // The same identity for sign-in, an admin listener that is not there.
    const cut = await startConsole(t, { identityPublicUrl: s.publicUrl, identityAdminUrl: 'http://127.0.0.1:9', now: s.clock.now })
    const operator = await signedIn(t, cut.url, auditor)
    const page = await operator.get(PAGE)
    t.equal(page.status, 502)
    t.equal(trailCheckOf(page)?.role, 'alert')
    t.match(trailCheckOf(page)?.text, /^The audit trail could not be verified: /)
    t.notOk(page.text.includes('intact'))
    const exported = await operator.get(EXPORT)
    t.equal(exported.status, 502, 'nor is an export started')
    t.match(exported.headers.get('content-type'), /^text\/html/)
  })

  t.test('a record edited in the database file: the alert names it', async (t) => {
    const target = rowsOf(await browser.get(`${PAGE}?action=user.create&order=oldest&limit=3`))[2]?.seq as number
    // As an attacker holding the file would: drop the append-only trigger, then edit.
    const db = new Database(s.databasePath)
    try {
      db.exec('DROP TRIGGER IF EXISTS audit_log_append_only')
      db.prepare('UPDATE audit_log SET target_name = ? WHERE seq = ?').run('someone-else@example.com', target)
    } finally {
      db.close()
    }
    const verified = await s.admin('GET', '/admin/audit/verify')
    t.same(verified.body, { valid: false, checked: target - 1, first_broken_seq: target }, 'identity finds the edit')
    const page = await browser.get(PAGE)
    t.equal(page.status, 200, 'the records are still listed')
    t.same(trailCheckOf(page), {
      role: 'alert',
      text: `The audit trail is broken at record #${target}: it was changed, removed or reordered outside identity, so it and the records after it cannot be trusted. The ${target - 1} records before it verify.`
    })
    t.notOk(page.text.includes('intact'))
  })
})
