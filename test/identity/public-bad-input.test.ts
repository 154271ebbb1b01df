import t, { type Test } from 'tap'
import { request as httpRequest } from 'node:http'
import { http, type HttpAnswer } from '../helpers/http.js'
import { assertJson, assertProblem, assertStatus } from '../helpers/assert.js'
import { startWithUser } from '../helpers/session-setup.js'

/**
 * Bad input on the public listener: every refusal is a problem+json with its code,
 * and nothing is written (no session opened, no refresh token consumed). Admin and
 * internal routes do not exist on this port.
 */

const BODY_LIMIT_BYTES = 2048
/** Numeric-looking on purpose: a body `"password": 12345678901` must not be coerced to it. */
const ADA = { email: 'ada@example.com', password: '12345678901' }

/** A 400 validation_failed whose `errors` name each violation. */
function assertValidation (t: Test, answer: HttpAnswer, errors: Array<{ path: string, message: string | RegExp }>): void {
  assertProblem(t, answer, 400, 'validation_failed')
  t.ok(Array.isArray(answer.body.errors), 'an errors array')
  t.match(answer.body.errors, errors)
  t.equal(answer.body.errors.length, errors.length, 'one error per violation', { body: answer.text })
}

/** node:http, so that no header is added behind our back (fetch always sends an Accept). */
async function raw (url: string, options: { method: string, headers: Record<string, string>, body?: string }): Promise<HttpAnswer> {
  return await new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: options.method, headers: options.headers }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { text += chunk })
      res.on('end', () => {
        let body: unknown = text
        try { body = text === '' ? null : JSON.parse(text) } catch {}
        const headers = Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v)]))
        resolve({ status: res.statusCode ?? 0, headers, body, text })
      })
    })
    req.on('error', reject)
    req.end(options.body)
  })
}

async function startWithCounts (t: Test) {
  const s = await startWithUser(t, { env: { IDENTITY_PUBLIC_BODY_LIMIT_BYTES: String(BODY_LIMIT_BYTES) }, user: ADA, checkLookups: true })
  const sessionCount = async () => (await s.sessions()).length
  const userCount = async () => (await s.admin('GET', '/admin/users')).body.users.length as number
  return { ...s, sessionCount, userCount }
}

t.test('POST /sessions', async (t) => {
  const { publicUrl, sessionCount } = await startWithCounts(t)
  const post = async (body: string | object, headers: Record<string, string> = {}) =>
    await http(`${publicUrl}/sessions`, { method: 'POST', body, headers })

  t.test('happy: application/json with a charset parameter is JSON', async (t) => {
    const answer = await post({ session: ADA }, { 'content-type': 'application/json; charset=utf-8' })
    assertStatus(t, answer, 201)
  })

  t.test('happy: a body just under the limit is read', async (t) => {
    const body = JSON.stringify({ session: ADA })
    const padded = body.slice(0, -1) + ' '.repeat(BODY_LIMIT_BYTES - body.length) + '}'
    t.equal(Buffer.byteLength(padded), BODY_LIMIT_BYTES)
    t.equal((await post(padded)).status, 201)
  })

  t.test('error', async (t) => {
    const before = await sessionCount()

    t.test('malformed JSON: 400 malformed_json', async (t) => {
      const answer = await post('{"session": {"email": "ada@example.com", "password": "12345678901"')
      assertProblem(t, answer, 400, 'malformed_json')
    })

    t.test('an empty JSON body: 400 empty_body', async (t) => {
      assertProblem(t, await post('', { 'content-type': 'application/json' }), 400, 'empty_body')
    })

    t.test('missing password: 400 validation_failed naming it', async (t) => {
      assertValidation(t, await post({ session: { email: ADA.email } }), [{ path: 'body/session', message: /password/ }])
    })

    t.test('missing session: 400 validation_failed naming it', async (t) => {
      assertValidation(t, await post({ email: ADA.email, password: ADA.password }), [
        { path: 'body', message: "must have required property 'session' (session)" },
        { path: 'body', message: 'must NOT have additional properties (email)' },
        { path: 'body', message: 'must NOT have additional properties (password)' }
      ])
    })

    t.test('an extra member at the top: 400 validation_failed, not ignored', async (t) => {
      assertValidation(t, await post({ session: ADA, remember_me: true }), [{ path: 'body', message: /additional properties \(remember_me\)/ }])
    })

    t.test('an extra member inside session: 400 validation_failed, not ignored', async (t) => {
      assertValidation(t, await post({ session: { ...ADA, role: 'admin' } }), [{ path: 'body/session', message: /additional properties \(role\)/ }])
    })

    t.test('password as a number is not coerced to the (numeric-looking) right password', async (t) => {
      assertValidation(t, await post({ session: { email: ADA.email, password: Number(ADA.password) } }), [
        { path: 'body/session/password', message: 'must be string' }
      ])
    })

    t.test('email as an array: 400 validation_failed', async (t) => {
      assertValidation(t, await post({ session: { email: [ADA.email], password: ADA.password } }), [
        { path: 'body/session/email', message: 'must be string' }
      ])
    })

    t.test('session as a string: 400 validation_failed', async (t) => {
      assertValidation(t, await post({ session: `${ADA.email}:${ADA.password}` }), [{ path: 'body/session', message: 'must be object' }])
    })

    t.test('a JSON array body: 400 validation_failed', async (t) => {
      assertValidation(t, await post([{ session: ADA }]), [{ path: 'body', message: 'must be object' }])
    })

    t.test('a __proto__ member (prototype poisoning): 400 malformed_json', async (t) => {
      const answer = await post('{"session": {"email": "ada@example.com", "password": "12345678901"}, "__proto__": {"admin": true}}')
      assertProblem(t, answer, 400, 'malformed_json')
    })

    t.test('text/plain: 415 unsupported_media_type', async (t) => {
      const answer = await post(JSON.stringify({ session: ADA }), { 'content-type': 'text/plain' })
      assertProblem(t, answer, 415, 'unsupported_media_type')
    })

    t.test('a form body: 415 unsupported_media_type', async (t) => {
      const answer = await post(`email=${ADA.email}&password=${ADA.password}`, { 'content-type': 'application/x-www-form-urlencoded' })
      assertProblem(t, answer, 415, 'unsupported_media_type')
    })

    t.test('a body with no Content-Type: 415 unsupported_media_type', async (t) => {
      const body = JSON.stringify({ session: ADA })
      const answer = await raw(`${publicUrl}/sessions`, { method: 'POST', headers: { 'content-length': String(Buffer.byteLength(body)) }, body })
      assertProblem(t, answer, 415, 'unsupported_media_type')
    })

    t.test(`a body over IDENTITY_PUBLIC_BODY_LIMIT_BYTES (${BODY_LIMIT_BYTES}): 413 body_too_large`, async (t) => {
      const body = JSON.stringify({ session: ADA })
      const padded = body.slice(0, -1) + ' '.repeat(BODY_LIMIT_BYTES - body.length + 1) + '}'
      t.equal(Buffer.byteLength(padded), BODY_LIMIT_BYTES + 1)
      const answer = await post(padded)
      assertProblem(t, answer, 413, 'body_too_large')
      t.equal(answer.body.detail, `The request body exceeds ${BODY_LIMIT_BYTES} bytes.`)
    })

    t.test('a much larger body: 413 body_too_large', async (t) => {
      assertProblem(t, await post({ session: { email: ADA.email, password: 'x'.repeat(100_000) } }), 413, 'body_too_large')
    })

    t.test('nothing was written: no session was opened by any of the above', async (t) => {
      t.equal(await sessionCount(), before)
    })
  })
})

t.test('POST /tokens and /jetons', async (t) => {
  const { publicUrl, sessionCount } = await startWithCounts(t)
  const login = await http(`${publicUrl}/sessions`, { body: { session: ADA } })
  t.equal(login.status, 201)
  const { access_token: accessToken, refresh_token: refreshToken } = login.body as { access_token: string, refresh_token: string }

  for (const path of ['/tokens', '/jetons']) {
    t.test(path, async (t) => {
      const post = async (body: string | object, headers: Record<string, string> = {}) =>
        await http(`${publicUrl}${path}`, { method: 'POST', bearer: accessToken, body, headers })

      t.test('malformed JSON: 400 malformed_json', async (t) => {
        assertProblem(t, await post(`{"refresh_token": "${refreshToken}"`), 400, 'malformed_json')
      })
      t.test('missing refresh_token: 400 validation_failed', async (t) => {
        assertValidation(t, await post({}), [{ path: 'body', message: /refresh_token/ }])
      })
      t.test('an extra member: 400 validation_failed', async (t) => {
        assertValidation(t, await post({ refresh_token: refreshToken, scope: 'admin' }), [{ path: 'body', message: /additional properties \(scope\)/ }])
      })
      t.test('refresh_token of the wrong type: 400 validation_failed', async (t) => {
        assertValidation(t, await post({ refresh_token: [refreshToken] }), [{ path: 'body/refresh_token', message: 'must be string' }])
      })
      t.test('text/plain: 415 unsupported_media_type', async (t) => {
        assertProblem(t, await post(JSON.stringify({ refresh_token: refreshToken }), { 'content-type': 'text/plain' }), 415, 'unsupported_media_type')
      })
      t.test('over the body limit: 413 body_too_large', async (t) => {
        assertProblem(t, await post({ refresh_token: refreshToken, padding: 'x'.repeat(BODY_LIMIT_BYTES) }), 413, 'body_too_large')
      })
      t.test('errors never echo the refresh token', async (t) => {
        const answer = await post({ refresh_token: refreshToken, extra: 1 })
        t.equal(answer.status, 400)
        t.notMatch(answer.text, refreshToken)
      })
    })
  }

  t.test('nothing was written: the refresh token was not consumed and no session was opened', async (t) => {
    t.equal(await sessionCount(), 1)
    const answer = await http(`${publicUrl}/tokens`, { bearer: accessToken, body: { refresh_token: refreshToken } })
    assertStatus(t, answer, 200)
  })
})

t.test('unknown routes: 404 not_found', async (t) => {
  const { publicUrl } = await startWithCounts(t)
  for (const [method, path] of [['GET', '/nope'], ['POST', '/session'], ['GET', '/sessions'], ['GET', '/tokens'], ['PUT', '/jetons'], ['DELETE', '/sessions/other']]) {
    t.test(`${method} ${path}`, async (t) => {
      const answer = await http(`${publicUrl}${path}`, { method })
      assertProblem(t, answer, 404, 'not_found')
      t.same(answer.body, {
        type: 'urn:portier:problem:not_found',
        title: 'Not found',
        status: 404,
        detail: `No route matches ${method} ${path}.`,
        code: 'not_found'
      })
    })
  }

  t.test('the query string is not echoed in the 404 detail', async (t) => {
    const answer = await http(`${publicUrl}/nope?access_token=s3cr3t-value`)
    assertProblem(t, answer, 404, 'not_found')
    t.notMatch(answer.text, 's3cr3t-value')
  })
})

t.test('Accept', async (t) => {
  const { publicUrl, sessionCount } = await startWithCounts(t)
  const body = JSON.stringify({ session: ADA })
  const login = async (headers: Record<string, string>) =>
    await raw(`${publicUrl}/sessions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body })

  t.test('happy: no Accept header is served', async (t) => {
    const answer = await login({})
    assertJson(t, answer, 201)
  })

  for (const accept of ['*/*', 'application/json', 'text/html, application/json;q=0.5', 'application/*']) {
    t.test(`happy: Accept: ${accept} is served`, async (t) => {
      t.equal((await login({ accept })).status, 201)
    })
  }

  t.test('error: Accept: text/html is 406 not_acceptable, before any work is done', async (t) => {
    const before = await sessionCount()
    for (const accept of ['text/html', 'text/html, application/xml', 'application/json;q=0']) {
      const answer = await login({ accept })
      assertProblem(t, answer, 406, 'not_acceptable')
    }
    const jwks = await raw(`${publicUrl}/.well-known/jwks.json`, { method: 'GET', headers: { accept: 'text/html' } })
    assertProblem(t, jwks, 406, 'not_acceptable')
    t.equal(await sessionCount(), before, 'no session was opened with the right credentials')
  })
})

t.test('security: admin and internal routes do not exist on the public port', async (t) => {
  const { publicUrl, adminToken, serviceToken, userCount, sessionCount } = await startWithCounts(t)
  const users = await userCount()
  const cases: Array<[method: string, path: string, bearer: string, body?: unknown]> = [
    ['GET', '/admin/users', adminToken],
    ['POST', '/admin/users', adminToken, { email: 'mallory@example.com', password: 'mallory password', roles: [] }],
    ['GET', '/admin/sessions', adminToken],
    ['POST', '/admin/signing-keys/rotate', adminToken],
    ['PUT', '/admin/roles/root', adminToken, { permissions: ['*'] }],
    ['POST', '/internal/keys/verify', serviceToken, { key: 'ptk_anything' }],
    ['GET', '/internal/sessions/revoked?since=0', serviceToken]
  ]
  for (const [method, path, bearer, body] of cases) {
    t.test(`${method} ${path} with its real credential: 404`, async (t) => {
      const answer = await http(`${publicUrl}${path}`, { method, bearer, ...(body !== undefined ? { body } : {}) })
      assertProblem(t, answer, 404, 'not_found')
    })
  }
  t.test('nothing was written', async (t) => {
    t.equal(await userCount(), users)
    t.equal(await sessionCount(), 0)
  })
})
