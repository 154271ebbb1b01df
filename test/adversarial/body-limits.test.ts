import t, { type Test } from 'tap'
import { ConfigError } from '../../common/config.js'
import { parseUpstreams } from '../../gateway/routing/index.js'
import { assertProblem, PROBLEM_JSON } from '../helpers/assert.js'
import { mockUpstreams, startStack } from '../helpers/gateway.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { startProcessStack } from '../helpers/process-stack.js'
import { requestBytes, socketRequest, type SocketAnswer } from '../helpers/raw-socket.js'

/**
 * Bodies are sized to the route. Identity's public routes (login, refresh, logout) take
 * a few KiB, at the gateway, which forwards them without a credential check, and on
 * identity's public listener itself; upstream routes keep 1 MiB, or their upstream's
 * own limit. A body over the limit is a 413 before it is buffered: answered on the
 * Content-Length alone, before a byte of the body is sent, and at the chunk that
 * crosses the limit when the body is chunked. (What becomes of the connection after such
 * a refusal is test/gateway/connections.test.ts's.)
 */

const IDENTITY_LIMIT = 8_192
const UPSTREAM_LIMIT = 1_048_576

const leaks = watchForLeaks()

interface LimitCase {
  name: string
  method: string
  path: string
  headers?: Array<[string, string]>
  /** The body as sent: `declared` Content-Length with only `sent` bytes of it, or chunked. */
  body: { declared: number, sent: number } | { chunked: number }
  status: number
  code?: string
  /** The limit the 413's detail names. */
  limit?: number
}

function bytesOf (host: string, c: LimitCase): Buffer {
  const headers: Array<[string, string]> = [['host', host], ['accept', 'application/json'], ['content-type', 'application/json'], ['connection', 'close'], ...c.headers ?? []]
  if ('chunked' in c.body) {
    const payload = ' '.repeat(c.body.chunked)
    return requestBytes(`${c.method} ${c.path} HTTP/1.1`, [...headers, ['transfer-encoding', 'chunked']], `${c.body.chunked.toString(16)}\r\n${payload}\r\n0\r\n\r\n`)
  }
  return requestBytes(`${c.method} ${c.path} HTTP/1.1`, [...headers, ['content-length', String(c.body.declared)]], ' '.repeat(c.body.sent))
}

async function runCases (t: Test, url: string, cases: LimitCase[]): Promise<void> {
  const host = new URL(url).host
  for (const c of cases) {
    await t.test(c.name, async (t) => {
      const answer: SocketAnswer = await socketRequest(url, bytesOf(host, c), 10_000)
      t.ok(answer.answered, 'answered (not left waiting for the rest of the body)')
      t.equal(answer.status, c.status, `status ${c.status}`, { body: answer.text })
      if (c.code !== undefined) {
        t.equal(answer.headers['content-type'], PROBLEM_JSON, 'problem+json')
        t.match(answer.body, { code: c.code, status: c.status }, c.code)
      }
      if (c.limit !== undefined) {
        t.equal((answer.body as { detail?: string }).detail, `The request body exceeds ${c.limit} bytes.`, `the detail names ${c.limit}`)
        t.equal(answer.headers.connection, 'close', 'the connection is closed, as the client asked')
      }
    })
  }
}

t.test('route-sized body limits, through the gateway and on identity (processes)', async (t) => {
  const s = await startProcessStack(t, { leaks })
  const key = await s.createKey(['debug:write'])
  const tokens = await s.login()
  const bearer: [string, string] = ['authorization', `Bearer ${tokens.access_token}`]
  const TOO_LARGE = { status: 413, code: 'body_too_large' }

  await t.test('through the gateway', async (t) => {
    await runCases(t, s.gateway.url, [
      { name: 'POST /sessions, Content-Length 8193, no body sent: 413 at once', method: 'POST', path: '/sessions', body: { declared: IDENTITY_LIMIT + 1, sent: 0 }, ...TOO_LARGE, limit: IDENTITY_LIMIT },
      { name: 'POST /sessions, Content-Length 1048575 and 1 MiB sent', method: 'POST', path: '/sessions', body: { declared: UPSTREAM_LIMIT - 1, sent: UPSTREAM_LIMIT - 1 }, ...TOO_LARGE, limit: IDENTITY_LIMIT },
      { name: 'POST /sessions, chunked, 9000 bytes', method: 'POST', path: '/sessions', body: { chunked: 9_000 }, ...TOO_LARGE, limit: IDENTITY_LIMIT },
      { name: 'POST /sessions, inflected, chunked, 9000 bytes', method: 'POST', path: '/sessions', headers: [['x-api-inflection', 'camel']], body: { chunked: 9_000 }, ...TOO_LARGE, limit: IDENTITY_LIMIT },
      { name: 'POST /tokens, Content-Length 8193, no body sent', method: 'POST', path: '/tokens', headers: [bearer], body: { declared: IDENTITY_LIMIT + 1, sent: 0 }, ...TOO_LARGE, limit: IDENTITY_LIMIT },
      { name: 'POST /jetons, chunked, 9000 bytes', method: 'POST', path: '/jetons', headers: [bearer], body: { chunked: 9_000 }, ...TOO_LARGE, limit: IDENTITY_LIMIT },
      { name: 'DELETE /sessions/current, Content-Length 9000', method: 'DELETE', path: '/sessions/current', headers: [bearer], body: { declared: 9_000, sent: 9_000 }, ...TOO_LARGE, limit: IDENTITY_LIMIT },
      { name: 'POST /sessions, 8192 bytes: under the limit, identity answers (spaces are not JSON: 400)', method: 'POST', path: '/sessions', body: { declared: IDENTITY_LIMIT, sent: IDENTITY_LIMIT }, status: 400, code: 'malformed_json' },
      { name: 'POST /echo with an API key, Content-Length 1048577: upstream routes keep 1 MiB', method: 'POST', path: '/echo', headers: [['x-api-key', key.key]], body: { declared: UPSTREAM_LIMIT + 1, sent: 0 }, ...TOO_LARGE, limit: UPSTREAM_LIMIT },
      { name: 'POST /echo with an API key, chunked, 1 MiB + 1', method: 'POST', path: '/echo', headers: [['x-api-key', key.key]], body: { chunked: UPSTREAM_LIMIT + 1 }, ...TOO_LARGE, limit: UPSTREAM_LIMIT }
    ])
    const padded = (body: unknown, size: number): string => {
      const text = JSON.stringify(body)
      return text.slice(0, -1) + ' '.repeat(size - text.length) + '}'
    }
    const login = await s.call('/sessions', { body: padded({ session: s.user }, IDENTITY_LIMIT) })
    t.equal(login.status, 201, 'a login of exactly 8192 bytes is accepted')
    leaks.secret(login.body.access_token, login.body.refresh_token)
    const echo = await s.call('/echo', { headers: { 'x-api-key': key.key }, body: padded({ a: 'x' }, UPSTREAM_LIMIT) })
    t.equal(echo.status, 200, 'a 1 MiB body is forwarded to an upstream route')
  })

  await t.test('on identity\'s public listener', async (t) => {
    await runCases(t, s.identity.publicUrl, [
      { name: 'POST /sessions, Content-Length 8193, no body sent', method: 'POST', path: '/sessions', body: { declared: IDENTITY_LIMIT + 1, sent: 0 }, ...TOO_LARGE, limit: IDENTITY_LIMIT },
      { name: 'POST /sessions, chunked, 9000 bytes', method: 'POST', path: '/sessions', body: { chunked: 9_000 }, ...TOO_LARGE, limit: IDENTITY_LIMIT },
      { name: 'POST /tokens, Content-Length 9000', method: 'POST', path: '/tokens', headers: [bearer], body: { declared: 9_000, sent: 9_000 }, ...TOO_LARGE, limit: IDENTITY_LIMIT },
      { name: 'POST /jetons, chunked, 9000 bytes', method: 'POST', path: '/jetons', headers: [bearer], body: { chunked: 9_000 }, ...TOO_LARGE, limit: IDENTITY_LIMIT }
    ])
  })

  await t.test('the admin listener keeps IDENTITY_BODY_LIMIT_BYTES (1 MiB): it authenticates before it reads a body', async (t) => {
    await runCases(t, s.identity.adminUrl, [
      { name: 'POST /admin/roles, 20000 bytes with the admin credential: read (then refused as JSON)', method: 'POST', path: '/admin/roles', headers: [['authorization', `Bearer ${s.identity.adminToken}`]], body: { declared: 20_000, sent: 20_000 }, status: 400, code: 'malformed_json' },
      { name: 'POST /admin/roles, Content-Length 1048577', method: 'POST', path: '/admin/roles', headers: [['authorization', `Bearer ${s.identity.adminToken}`]], body: { declared: UPSTREAM_LIMIT + 1, sent: 0 }, ...TOO_LARGE, limit: UPSTREAM_LIMIT },
      { name: 'POST /admin/roles without a credential, Content-Length 1048575: refused before the body is read', method: 'POST', path: '/admin/roles', body: { declared: UPSTREAM_LIMIT - 1, sent: 0 }, status: 401, code: 'admin_unauthorized' }
    ])
  })
})

t.test('an upstream can set its own body limit (upstreams[].bodyLimitBytes)', async (t) => {
  const stack = await startStack(t)
  const key = await stack.createKey(['debug:write', 'tasks:create'])
  const upstreams = mockUpstreams(stack.upstreamUrl).upstreams.map((u) => ({ ...u, bodyLimitBytes: 2_048 }))
  const gateway = await stack.addGateway({ upstreams: { upstreams } })
  const headers = { 'x-api-key': key.key }
  assertProblem(t, await gateway.call('/echo', { headers, body: { a: 'x'.repeat(3_000) } }), 413, 'body_too_large', 'a 3 KB body over the upstream\'s 2048')
  t.equal((await gateway.call('/echo', { headers, body: { a: 'x'.repeat(1_900) } })).status, 200, 'a 1.9 KB body is forwarded')
  // Identity's schema refuses a 7 000-character password: the body got past 2048 bytes, to identity.
  assertProblem(t, await gateway.call('/sessions', { body: { session: { email: 'a@example.com', password: 'x'.repeat(7_000) } } }), 400, 'validation_failed',
    'identity\'s routes keep their own limit (a 7 KB login reaches identity)')

  let problems: string[] = []
  try {
    parseUpstreams(JSON.stringify({ upstreams: [{ ...mockUpstreams('http://127.0.0.1:1').upstreams[0], bodyLimitBytes: 100 }] }), 'upstreams.json', 'json')
  } catch (err) {
    if (err instanceof ConfigError) problems = err.problems
  }
  t.match(problems.join('\n'), /bodyLimitBytes/, 'a limit under 1024 is a configuration error naming it', { problems })
})

t.test('leaks', async (t) => { await leaks.assertNoLeaks(t) })
