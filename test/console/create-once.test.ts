import t from 'tap'
import type { Test } from 'tap'
import { Browser, csrfOf, formTokenOf, startConsoleStack, tokensOf, type PageAnswer } from '../helpers/console.js'
import { http } from '../helpers/http.js'

/**
 * The create-key form makes its key once: sent again (back and resend, a double click,
 * a copy without its token) it answers 409 with the form and makes nothing, while forms
 * from two tabs each work once.
 */

t.test('a create-key form is accepted once', async (t) => {
  const { s, gateway, console } = await startConsoleStack(t)
  const browser = new Browser(gateway.url)
  const signIn = await browser.get('/console/sign-in')
  t.equal((await browser.post('/console/sign-in', { _csrf: csrfOf(signIn), email: s.user.email, password: s.user.password })).status, 303, 'signed in')

  const keyNames = async (): Promise<string[]> => {
    const answer = await http(`${s.publicUrl}/me/keys`, { bearer: tokensOf(console, browser).access })
    t.equal(answer.status, 200)
    return (answer.body.api_keys as Array<{ name: string }>).map((key) => key.name).sort()
  }
  const fill = (form: PageAnswer, name: string): Record<string, string> =>
    ({ _csrf: csrfOf(form), form_token: formTokenOf(form), name, permissions: 'users:list', expiry: '30' })
  const checkRefused = (t: Test, answer: PageAnswer, what: string): void => {
    t.equal(answer.status, 409, `${what}: 409`)
    t.match(answer.text, /role="alert"[^>]*>\s*<p>This form was already sent: the key was made once\. See My keys\.<\/p>/, `${what}: says so`)
    t.match(answer.text, /<h1>Create a key<\/h1>/, `${what}: the form again`)
    t.notMatch(answer.text, /id="secret"/, `${what}: no secret`)
  }

  t.test('the same form sent twice makes one key', async (t) => {
    const form = await browser.get('/console/keys/new')
    t.match(form.text, /<input type="hidden" name="form_token" value="[A-Za-z0-9_-]{22}">/, 'the form carries its token')
    const body = fill(form, 'once')
    const first = await browser.post('/console/keys', body)
    t.equal(first.status, 201, 'the first send makes the key')
    t.equal(first.headers.get('cache-control'), 'no-store', 'its secret page is never cached')
    checkRefused(t, await browser.post('/console/keys', body), 'the same form again (back and resend)')
    t.same(await keyNames(), ['once'], 'one key')
  })

  t.test('a double click: two sends before either answer', async (t) => {
    const form = await browser.get('/console/keys/new')
    // Both carry the cookie as it was: the first answer has not replaced it yet. Two names,
    // so identity's own refusal of a second key of one name cannot be what stops the second.
    const answers = await Promise.all([browser.post('/console/keys', fill(form, 'clicked')), browser.post('/console/keys', fill(form, 'clicked-twice'))])
    const [made, refused] = answers[0].status === 201 ? answers : [answers[1], answers[0]]
    t.equal(made.status, 201, 'one made')
    checkRefused(t, refused, 'the other')
    t.equal((await keyNames()).filter((name) => name.startsWith('clicked')).length, 1, 'one key more')
  })

  t.test('two tabs: two forms, each works once', async (t) => {
    const first = await browser.get('/console/keys/new')
    const second = await browser.get('/console/keys/new')
    t.not(formTokenOf(first), formTokenOf(second), 'each form its own token')
    t.equal((await browser.post('/console/keys', fill(second, 'tab-2'))).status, 201, 'the second tab\'s form')
    t.equal((await browser.post('/console/keys', fill(first, 'tab-1'))).status, 201, 'the first tab\'s form')
    checkRefused(t, await browser.post('/console/keys', fill(first, 'tab-1-again')), 'the first tab\'s form sent again, renamed')
    t.same((await keyNames()).filter((name) => name.startsWith('tab-')), ['tab-1', 'tab-2'], 'two keys more')
  })

  t.test('without a token, or with one the session was never given, nothing is made', async (t) => {
    const form = await browser.get('/console/keys/new')
    const { form_token: _token, ...untokened } = fill(form, 'untokened')
    checkRefused(t, await browser.post('/console/keys', untokened), 'no token')
    checkRefused(t, await browser.post('/console/keys', { ...fill(form, 'forged'), form_token: 'AAAAAAAAAAAAAAAAAAAAAA' }), 'a token of nobody\'s')
    t.equal((await keyNames()).length, 4, 'no key more')
  })

  t.test('a form refused for its content keeps its token: corrected, it works once', async (t) => {
    const form = await browser.get('/console/keys/new')
    const body = fill(form, '')
    const refused = await browser.post('/console/keys', body)
    t.equal(refused.status, 400, 'no name: refused')
    t.equal((await browser.post('/console/keys', { ...body, name: 'corrected' })).status, 201, 'the same form, corrected')
    t.equal((await keyNames()).filter((name) => name === 'corrected').length, 1, 'one key more')
  })

  t.test('only the last five forms shown are kept', async (t) => {
    const oldest = await browser.get('/console/keys/new')
    for (let i = 0; i < 5; i++) await browser.get('/console/keys/new')
    checkRefused(t, await browser.post('/console/keys', fill(oldest, 'forgotten')), 'the sixth form back')
    const names = await keyNames()
    t.notOk(names.includes('forgotten'), 'nothing made')
  })
})
