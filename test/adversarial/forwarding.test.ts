import t, { type Test } from 'tap'
import { connect } from 'node:net'
import { assertJson, assertProblem } from '../helpers/assert.js'
import { http } from '../helpers/http.js'
import { watchForLeaks } from '../helpers/leak-watch.js'
import { startProcessStack, type GatewayProcess, type ServerProcess } from '../helpers/process-stack.js'
import { requestBytes, socketRequest, type SocketAnswer } from '../helpers/raw-socket.js'

/**
 * What reaches upstreams, through real processes over raw sockets: headers a client
 * sends never pass as the gateway's own. Names with `_`, `.` or other symbols (which
 * CGI-style servers read as the dashed name) are dropped; method overrides in a query
 * name of any spelling or a JSON body member are refused; provenance headers pass only
 * from a trusted proxy, and X-Forwarded-For/-Proto/-Host are the gateway's (identity's
 * per-IP login throttle depends on it); Host is one well-formed host[:port]; hop-by-hop
 * headers are answered or dropped, never a 502; a malformed query is a 400 on every
 * listener of every service, and a query is forwarded apart from the path, unchanged.
 * No process logs an error, and no client header is ever logged as an upstream failure.
 */

type Header = [string, string]

interface RawRequest {
  method?: string
  target: string
  headers?: Header[]
  body?: string
  /** The Host header; null: none. Default: the server's host:port. */
  host?: string | null
  version?: '1.0' | '1.1'
}

/** One request written byte for byte (Host and `connection: close` first), answered over the same socket. */
async function send (url: string, request: RawRequest): Promise<SocketAnswer> {
  const host = request.host === undefined ? new URL(url).host : request.host
  const headers: Header[] = [...(host === null ? [] : [['host', host] as Header]), ['connection', 'close'], ...(request.headers ?? [])]
  const framed = headers.some(([name]) => /^(content-length|transfer-encoding)$/i.test(name))
  if (request.body !== undefined && !framed) headers.push(['content-length', String(Buffer.byteLength(request.body))])
  const line = `${request.method ?? 'GET'} ${request.target} HTTP/${request.version ?? '1.1'}`
  return await socketRequest(url, requestBytes(line, headers, request.body), 30_000)
}

/** The final answer in `data` once complete (by Content-Length, or at close), or null. */
function finalAnswer (data: string, closed: boolean): { status: number, text: string } | null {
  const end = data.indexOf('\r\n\r\n')
  if (end === -1) return null
  const head = data.slice(0, end)
  const text = data.slice(end + 4)
  const length = /\r\ncontent-length: *(\d+)/i.exec(head)?.[1]
  if (length === undefined ? !closed : Buffer.byteLength(text, 'latin1') < Number(length)) return null
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), text }
}

/** Sends the head alone, waits for `100 Continue`, then the body; resolves with the interim status line and the final answer. */
async function sendExpectingContinue (url: string, target: string, headers: Header[], body: string): Promise<{ interim: string, status: number, text: string }> {
  const { hostname, port } = new URL(url)
  const head = requestBytes(`POST ${target} HTTP/1.1`, [['host', `${hostname}:${port}`], ['connection', 'close'],
    ['content-length', String(Buffer.byteLength(body))], ...headers])
  return await new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) })
    let data = ''
    let interim: string | null = null
    const timer = setTimeout(() => { socket.destroy(); reject(new Error(`no complete answer: ${JSON.stringify(data)}`)) }, 10_000)
    const settle = (closed: boolean): void => {
      if (interim === null) {
        if (closed) reject(new Error('closed without an answer'))
        return
      }
      const final = interim.startsWith('HTTP/1.1 100') ? finalAnswer(data, closed) : finalAnswer(`${interim}\r\n${data}`, closed)
      if (final === null) return
      clearTimeout(timer)
      socket.destroy()
      resolve({ interim, ...final })
    }
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => {
      data += chunk
      if (interim === null && data.includes('\r\n\r\n')) {
        interim = data.slice(0, data.indexOf('\r\n'))
        if (interim.startsWith('HTTP/1.1 100')) {
          data = data.slice(data.indexOf('\r\n\r\n') + 4)
          // The body goes only once the gateway has said to send it.
          socket.write(body)
        } else {
          data = data.slice(data.indexOf('\r\n') + 2)
        }
      }
      settle(false)
    })
    socket.on('error', reject)
    socket.on('close', () => { settle(true) })
    socket.write(head)
  })
}

/** The log lines of a process at error level or above (pino: 50 error, 60 fatal). */
function errorLines (server: ServerProcess): string[] {
  return server.output().split('\n').filter((line) => {
    try { return ((JSON.parse(line) as { level?: number }).level ?? 0) >= 50 } catch { return false }
  })
}

const upstreamFailureLines = (gateway: ServerProcess): number => gateway.output().split('\n').filter((line) => /"msg":"upstream (unreachable|timed out)"/.test(line)).length

/** Answers a gateway has had from any upstream (the proxy's duration histogram counts them). */
async function upstreamAnswers (gateway: GatewayProcess): Promise<number> {
  const text = (await http(`${gateway.metricsUrl}/metrics`)).text
  return text.split('\n').filter((line) => line.startsWith('portier_gateway_upstream_duration_seconds_count{'))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0)
}

/** A refusal by the gateway itself: the problem, and no upstream saw the request. */
async function assertRefused (t: Test, gateway: GatewayProcess, request: RawRequest, status: number, code: string, label: string): Promise<void> {
  const before = await upstreamAnswers(gateway)
  assertProblem(t, await send(gateway.url, request), status, code, label)
  t.equal(await upstreamAnswers(gateway), before, `${label}: no upstream saw it`)
}

const echoed = (answer: SocketAnswer): Record<string, string> => (answer.body as { headers: Record<string, string> }).headers

const leaks = watchForLeaks()

t.test('what reaches upstreams', async (t) => {
  // Identity trusts the gateways (as deployed): its per-IP throttle reads the X-Forwarded-For they send.
  const s = await startProcessStack(t, {
    leaks,
    identityEnv: { IDENTITY_TRUST_PROXY: '127.0.0.1', IDENTITY_LOGIN_MAX_FAILURES_PER_IP: '3', IDENTITY_LOGIN_MAX_FAILURES_PER_EMAIL: '1000' }
  })
  const gateway = s.gateway
  // A gateway behind a load balancer: the test client, on 127.0.0.1, plays the balancer.
  const behindProxy = await s.addGateway({ GATEWAY_TRUST_PROXY: '127.0.0.1', GATEWAY_ALLOWED_UNUSUAL_HEADERS: 'x_legacy_id, X.Trace' })
  const key = await s.createKey(['debug:read', 'debug:write', 'users:list'])
  const withKey: Header = ['x-api-key', key.key]
  const JSON_TYPE: Header = ['content-type', 'application/json']
  const echo = async (server: ServerProcess, headers: Header[], request: Partial<RawRequest> = {}): Promise<SocketAnswer> =>
    await send(server.url, { target: '/echo', ...request, headers: [withKey, ...headers, ...(request.headers ?? [])] })

  await t.test('header names with a character other than letters, digits and - are dropped', async (t) => {
    const aliases: Header[] = [
      ['x_portier_principal', 'usr_root'],
      ['x_portier_permissions', '*'],
      ['x_portier_principal_type', 'service'],
      ['X_Portier_Permissions', '*'],
      ['x.portier.principal', 'usr_root'],
      ['x~portier~permissions', '*'],
      ['x!portier!permissions', '*'],
      ['x_original_url', '/admin/users'],
      ['x_rewrite_url', '/admin/users'],
      ['x_http_method_override', 'DELETE'],
      ['x_forwarded_for', '203.0.113.66'],
      ['x_forwarded_host', 'evil.example'],
      ['x_real_ip', '203.0.113.66'],
      ['x_api_key', 'ptk_not_a_key'],
      ['x*custom', 'a'],
      ["x'custom", 'a'],
      ['x|custom', 'a'],
      ['x^custom', 'a'],
      ['x`custom', 'a'],
      ['x#custom', 'a'],
      ['x$custom', 'a'],
      ['x%custom', 'a'],
      ['x&custom', 'a'],
      ['x+custom', 'a'],
      ['x_legacy_id', '7']
    ]
    for (const [name, value] of aliases) {
      const answer = await echo(gateway, [[name, value], ['x-plain-header', 'kept']])
      assertJson(t, answer, 200, `${name}: served`)
      const seen = echoed(answer)
      t.same(Object.keys(seen).filter((n) => n === name.toLowerCase() || !/^[a-z0-9-]+$/.test(n)), [], `${name}: not forwarded`)
      t.equal(seen['x-plain-header'], 'kept', `${name}: a plain header beside it is forwarded`)
      t.same((answer.body as { principal: unknown }).principal, { id: key.id, permissions: ['debug:read', 'debug:write', 'users:list'] },
        `${name}: the upstream reads the key's principal`)
    }
    const allowed = await echo(behindProxy, [['x_legacy_id', '7'], ['x.trace', 'abc'], ['x_other', 'dropped']])
    assertJson(t, allowed, 200, 'a gateway allowing x_legacy_id and X.Trace')
    t.same([echoed(allowed).x_legacy_id, echoed(allowed)['x.trace'], echoed(allowed).x_other], ['7', 'abc', undefined],
      'the allowed names are forwarded, any other is still dropped')
  })

  await t.test('method overrides in a query name, in any spelling, are refused', async (t) => {
    const spellings = ['_method=DELETE', '%5Fmethod=DELETE', '%5fmethod=DELETE', '.method=DELETE', '%2Emethod=DELETE', '+method=DELETE',
      '%20method=DELETE', '+_method=DELETE', '%20_method=DELETE', '_METHOD=DELETE', '_Method=PUT', '_method[]=DELETE', '_method[x]=DELETE',
      '_method%5B%5D=DELETE', '_method[=DELETE', '%255Fmethod=DELETE', '_method%00x=DELETE', '%5F%6D%65%74%68%6F%64=DELETE', 'a=1;_method=DELETE',
      'a=1&_method', 'x-http-method-override=DELETE', 'X-HTTP-Method=PUT', 'x-method-override=PATCH', 'x_http_method_override=DELETE',
      '_HttpMethod=PATCH', '_httpmethod=PATCH']
    for (const query of spellings) {
      await assertRefused(t, gateway, { target: `/echo?${query}`, headers: [withKey] }, 400, 'method_override_refused', `GET /echo?${query}`)
    }
    await assertRefused(t, gateway, { method: 'POST', target: '/echo?%5Fmethod=DELETE', headers: [withKey, JSON_TYPE], body: '{}' },
      400, 'method_override_refused', 'POST /echo?%5Fmethod=DELETE')
    await assertRefused(t, gateway, { target: '/.well-known/jwks.json?_method=DELETE' }, 400, 'method_override_refused', 'on identity\'s routes too')
    for (const query of ['method=GET', 'methodology=1', 'payment_method=card', '_methods=1', 'q=_method', 'a=%5Fmethod']) {
      const answer = await echo(gateway, [], { target: `/echo?${query}` })
      assertJson(t, answer, 200, `control: /echo?${query} is served`)
      t.equal((answer.body as { search: string }).search, `?${query}`, `control: ?${query} reaches the upstream unchanged`)
    }
  })

  await t.test('method overrides in a JSON body member are refused', async (t) => {
    const bodies: Array<[string, string, Header[]?]> = [
      ['_method', '{"_method":"DELETE"}'],
      ['_method after other members', '{"title":"x","_method":"DELETE"}'],
      ['_METHOD', '{"_METHOD":"DELETE"}'],
      ['_Method', '{"_Method":"PUT"}'],
      ['an escaped underscore', '{"\\u005fmethod":"DELETE"}'],
      ['escaped letters', '{"_\\u006d\\u0065thod":"DELETE"}'],
      ['.method', '{".method":"DELETE"}'],
      ['_method[]', '{"_method[]":"DELETE"}'],
      ['a leading space', '{" _method":"DELETE"}'],
      ['x-http-method-override', '{"x-http-method-override":"DELETE"}'],
      ['X_HTTP_METHOD', '{"X_HTTP_METHOD":"DELETE"}'],
      ['_HttpMethod', '{"_HttpMethod":"PATCH"}'],
      ['_method twice', '{"_method":"GET","_method":"DELETE"}'],
      ['camelCase xHttpMethodOverride, inflected to the upstream\'s snake_case', '{"xHttpMethodOverride":"DELETE"}', [['x-api-inflection', 'camel']]]
    ]
    for (const [label, body, extra] of bodies) {
      await assertRefused(t, gateway, { method: 'POST', target: '/echo', headers: [withKey, JSON_TYPE, ...(extra ?? [])], body },
        400, 'method_override_refused', `POST /echo with ${label}`)
    }
    await assertRefused(t, gateway, { method: 'POST', target: '/echo', headers: [withKey, JSON_TYPE], body: '{"_method":"DELETE",}' },
      400, 'malformed_json', 'a body naming _method that the gateway cannot parse (a trailing comma)')
    for (const body of ['{"method":"card"}', '{"payment_method":"card"}', '{"nested":{"_method":"DELETE"}}', '["_method"]', '"_method"']) {
      const answer = await echo(gateway, [JSON_TYPE], { method: 'POST', body })
      assertJson(t, answer, 200, `control: ${body} is forwarded`)
      t.same((answer.body as { body: unknown }).body, JSON.parse(body), `control: ${body} arrives as sent`)
    }
  })

  await t.test('provenance headers: dropped from a client, the gateway\'s own X-Forwarded-*', async (t) => {
    const spoofed: Header[] = [
      ['x-forwarded-for', '203.0.113.66'], ['forwarded', 'for=203.0.113.66;proto=https;host=evil.example'], ['x-real-ip', '203.0.113.66'],
      ['x-forwarded-proto', 'https'], ['x-forwarded-host', 'evil.example'], ['x-forwarded-port', '443'], ['x-forwarded-prefix', '/admin'],
      ['x-forwarded-server', 'evil.example'], ['x-forwarded-scheme', 'https'], ['x-forwarded-ssl', 'on'], ['x-forwarded-uri', '/admin/users'],
      ['x-forwarded-client-cert', 'Hash=1;Subject="CN=admin"'], ['x-client-ip', '203.0.113.66'], ['client-ip', '203.0.113.66'],
      ['true-client-ip', '203.0.113.66'], ['cf-connecting-ip', '203.0.113.66'], ['fastly-client-ip', '203.0.113.66'],
      ['x-cluster-client-ip', '203.0.113.66'], ['x-original-forwarded-for', '203.0.113.66'], ['x-host', 'evil.example'],
      ['x-original-host', 'evil.example'], ['x-envoy-external-address', '203.0.113.66'], ['x-envoy-internal', 'true'],
      ['x-ssl-client-verify', 'SUCCESS'], ['x-client-cert', 'MIIB'], ['front-end-https', 'on'], ['x-url-scheme', 'https'],
      ['x-original-url', '/admin/users'], ['x-rewrite-url', '/admin/users'], ['x-original-uri', '/admin/users']
    ]
    const answer = await echo(gateway, spoofed)
    assertJson(t, answer, 200, 'GET /echo with every provenance header spoofed')
    const seen = echoed(answer)
    for (const [name] of spoofed) {
      if (!['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host'].includes(name)) t.notOk(name in seen, `${name} is dropped`)
    }
    t.same([seen['x-forwarded-for'], seen['x-forwarded-proto'], seen['x-forwarded-host']], ['127.0.0.1', 'http', new URL(gateway.url).host],
      'X-Forwarded-For, -Proto and -Host are the gateway\'s: the peer, the scheme it was reached over, the Host')
  })

  await t.test('provenance headers from a trusted proxy: kept, and X-Forwarded-For appended to', async (t) => {
    const host = new URL(behindProxy.url).host
    const answer = await echo(behindProxy, [
      ['x-forwarded-for', '198.51.100.9, 203.0.113.7'], ['forwarded', 'for=203.0.113.7;proto=https'], ['x-real-ip', '203.0.113.7'],
      ['x-forwarded-proto', 'https'], ['x-forwarded-host', 'api.example.com'], ['x-forwarded-port', '443'],
      ['x-forwarded-prefix', '/admin'], ['x-original-url', '/admin/users'], ['x_real_ip', '198.51.100.9']
    ])
    assertJson(t, answer, 200, 'GET /echo through a trusted proxy')
    const seen = echoed(answer)
    t.equal(seen['x-forwarded-for'], '203.0.113.7, 127.0.0.1',
      'the client the proxy named, then the proxy: what the client wrote before that is dropped')
    t.equal(seen.forwarded, `for=203.0.113.7;proto=https, for=127.0.0.1;proto=http;host="${host}"`, 'Forwarded gets the gateway\'s element')
    t.same([seen['x-real-ip'], seen['x-forwarded-proto'], seen['x-forwarded-host'], seen['x-forwarded-port']],
      ['203.0.113.7', 'https', 'api.example.com', '443'], 'the proxy\'s X-Real-IP, scheme, host and port are kept')
    t.same([seen['x-forwarded-prefix'], seen['x-original-url'], seen.x_real_ip], [undefined, undefined, undefined],
      'path overrides and unusual names are dropped even from a trusted proxy')

    const noChain = await echo(behindProxy, [['x-forwarded-for', 'not-an-address'], ['x-real-ip', '203.0.113.7']])
    assertJson(t, noChain, 200, 'a trusted proxy naming no client address')
    t.same([echoed(noChain)['x-forwarded-for'], echoed(noChain)['x-real-ip']], ['127.0.0.1', undefined],
      'an entry that is not an address ends the chain: the peer alone, its other provenance dropped')

    await assertRefused(t, behindProxy, { target: '/echo', headers: [withKey, ['x-forwarded-for', '203.0.113.7'], ['x-forwarded-host', 'evil.example/admin']] },
      400, 'malformed_host', 'a trusted proxy\'s X-Forwarded-Host that is not host[:port]')
  })

  await t.test('identity\'s per-IP login throttle sees the client the gateway vouches for', async (t) => {
    const login = async (server: ServerProcess, i: number, forwardedFor: string): Promise<SocketAnswer> => await send(server.url, {
      method: 'POST',
      target: '/sessions',
      headers: [JSON_TYPE, ['x-forwarded-for', forwardedFor]],
      body: JSON.stringify({ session: { email: `nobody${i}@example.com`, password: 'wrong password' } })
    })
    for (let i = 0; i < 3; i++) assertProblem(t, await login(gateway, i, `198.51.100.${i}`), 401, 'invalid_credentials', `failure ${i + 1}`)
    assertProblem(t, await login(gateway, 3, '198.51.100.3'), 429, 'login_throttled',
      'a client cannot dodge the limit with a new X-Forwarded-For each time: identity counts the gateway\'s peer')
    assertProblem(t, await login(behindProxy, 4, '203.0.113.50'), 401, 'invalid_credentials',
      'behind a trusted proxy, identity counts the client the proxy named, apart')
  })

  await t.test('Host: one host[:port], or 400', async (t) => {
    const refused = ['example.com:99999', 'example.com:', 'example.com:8o', ':8080', '[::1', '[not-ipv6]:80', '[::1]x', 'a,b.example',
      'a;b.example', "a'b.example", 'user@example.com', 'example.com/admin', '%65xample.com', 'exa mple.com', '"example.com"', 'a'.repeat(300)]
    for (const host of refused) {
      await assertRefused(t, gateway, { target: '/echo', host, headers: [withKey] }, 400, 'malformed_host', `Host: ${host.slice(0, 40)}`)
    }
    const port = new URL(gateway.url).host
    await assertRefused(t, gateway, { target: '/echo', headers: [withKey, ['host', 'evil.example']] }, 400, 'malformed_host', 'two Host headers')
    await assertRefused(t, gateway, { target: '/echo', headers: [withKey, ['Host', port]] }, 400, 'malformed_host', 'the same Host twice')
    await assertRefused(t, gateway, { target: '/.well-known/jwks.json', headers: [['host', 'evil.example']] }, 400, 'malformed_host',
      'two Host headers on an unauthenticated route')
    for (const host of ['example.com', 'EXAMPLE.com:8080', 'api_v2.internal', '127.0.0.1:3000', '[::1]:3000', '[2001:db8::1]']) {
      const answer = await echo(gateway, [], { host })
      assertJson(t, answer, 200, `Host: ${host}`)
      t.equal(echoed(answer)['x-forwarded-host'], host, `Host: ${host} becomes X-Forwarded-Host`)
    }
    const http10 = await send(gateway.url, { target: '/echo', host: null, version: '1.0', headers: [withKey] })
    assertJson(t, http10, 200, 'HTTP/1.0 without Host')
    t.notOk('x-forwarded-host' in echoed(http10), 'no Host: no X-Forwarded-Host')
  })

  await t.test('with public hosts set, another Host is a 421 and X-Forwarded-Host is always a listed one', async (t) => {
    const publicOnly = await s.addGateway({ GATEWAY_PUBLIC_HOSTS: 'api.example.com, API.example.com:8443', GATEWAY_TRUST_PROXY: '127.0.0.1' })
    for (const host of ['api.example.com', 'API.EXAMPLE.COM', 'api.example.com:8443']) {
      const answer = await echo(publicOnly, [], { host })
      assertJson(t, answer, 200, `Host: ${host}`)
      t.equal(echoed(answer)['x-forwarded-host'], host, `Host: ${host} becomes X-Forwarded-Host`)
    }
    for (const host of ['other.example', new URL(publicOnly.url).host, 'api.example.com:443', 'example.com', 'api.example.com.evil']) {
      const refused = await send(publicOnly.url, { target: '/echo', host, headers: [withKey] })
      assertProblem(t, refused, 421, 'misdirected_request', `Host: ${host}`)
    }
    await assertRefused(t, publicOnly, { target: '/users', host: 'evil.example' }, 421, 'misdirected_request', 'before the credential is even read')
    await assertRefused(t, publicOnly, { target: '/echo', host: null, version: '1.0', headers: [withKey] }, 421, 'misdirected_request', 'HTTP/1.0 without Host')
    await assertRefused(t, publicOnly, { target: '/echo', host: 'api.example.com', headers: [withKey, ['x-forwarded-for', '203.0.113.7'], ['x-forwarded-host', 'evil.example']] },
      421, 'misdirected_request', 'a trusted proxy forwarding another host')
    const proxied = await echo(publicOnly, [['x-forwarded-for', '203.0.113.7'], ['x-forwarded-host', 'api.example.com']], { host: 'gateway.internal' })
    assertJson(t, proxied, 200, 'a trusted proxy forwarding a public host, whatever its own Host')
    t.equal(echoed(proxied)['x-forwarded-host'], 'api.example.com', 'X-Forwarded-Host is the public one')
    t.equal((await send(publicOnly.url, { target: '/healthz', host: 'other.example' })).status, 200, 'probes answer whatever the Host')
  })

  await t.test('hop-by-hop headers are never forwarded, never a 502, never an upstream failure', async (t) => {
    const failuresBefore = upstreamFailureLines(gateway)
    const cases: Array<[string, Header[], string[]]> = [
      ['Keep-Alive', [['keep-alive', 'timeout=5, max=100']], ['keep-alive']],
      ['Upgrade without Connection: upgrade', [['upgrade', 'websocket']], ['upgrade']],
      ['Upgrade: h2c without Connection', [['upgrade', 'h2c']], ['upgrade']],
      ['TE: trailers', [['te', 'trailers']], ['te']],
      ['TE: gzip', [['te', 'gzip']], ['te']],
      ['Trailer', [['trailer', 'x-checksum']], ['trailer']],
      ['Proxy-Connection', [['proxy-connection', 'keep-alive']], ['proxy-connection']],
      ['HTTP2-Settings', [['http2-settings', 'AAMAAABkAAQAoAAAAAIAAAAA']], ['http2-settings']],
      ['Proxy-Authorization', [['proxy-authorization', 'Basic dXNlcjpwYXNz']], ['proxy-authorization']],
      ['a header named by Connection', [['connection', 'x-drop-me'], ['x-drop-me', '1']], ['x-drop-me']],
      ['Keep-Alive and Upgrade together', [['keep-alive', '5'], ['upgrade', 'websocket'], ['te', 'trailers']], ['keep-alive', 'upgrade', 'te']]
    ]
    for (const [label, headers, dropped] of cases) {
      const answer = await echo(gateway, headers)
      assertJson(t, answer, 200, `${label}: served`)
      t.same(dropped.filter((name) => name in echoed(answer)), [], `${label}: not forwarded`)
    }
    const body = JSON.stringify({ title: 'chunked' })
    const chunked = await echo(gateway, [JSON_TYPE, ['transfer-encoding', 'chunked']],
      { method: 'POST', body: `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n` })
    assertJson(t, chunked, 200, 'a chunked body')
    t.same((chunked.body as { body: unknown }).body, { title: 'chunked' }, 'arrives whole, re-framed')
    t.notOk('transfer-encoding' in echoed(chunked), 'with the gateway\'s own framing')

    const continued = await sendExpectingContinue(gateway.url, '/echo', [withKey, JSON_TYPE, ['expect', '100-continue']], '{"big":"body"}')
    t.equal(continued.interim, 'HTTP/1.1 100 Continue', 'Expect: 100-continue gets 100 Continue')
    t.equal(continued.status, 200, 'then the answer')
    t.match(JSON.parse(continued.text), { body: { big: 'body' } }, 'with the body forwarded')
    t.notOk('expect' in (JSON.parse(continued.text) as { headers: object }).headers, 'Expect is not forwarded')
    const other = await sendExpectingContinue(gateway.url, '/echo', [withKey, JSON_TYPE, ['expect', 'something-else']], '{}')
    t.equal(other.status, 417, 'any other expectation: 417 Expectation Failed')

    t.equal(upstreamFailureLines(gateway), failuresBefore, 'no upstream failure was logged')
  })

  await t.test('a malformed query string is a 400 on every route of every service', async (t) => {
    const login = JSON.stringify({ session: { email: 'nobody@example.com', password: 'wrong password' } })
    const gatewayCases: Array<[string, RawRequest]> = [
      ['/echo?a=%', { target: '/echo?a=%', headers: [withKey] }],
      ['/echo?a=%zz', { target: '/echo?a=%zz', headers: [withKey] }],
      ['/echo?%', { target: '/echo?%', headers: [withKey] }],
      ['/echo?a=%2', { target: '/echo?a=%2', headers: [withKey] }],
      ['/echo?a=1&b=%%41', { target: '/echo?a=1&b=%%41', headers: [withKey] }],
      ['/echo?x=/..&a=%', { target: '/echo?x=/..&a=%', headers: [withKey] }],
      ['/users?per_page=%', { target: '/users?per_page=%', headers: [withKey] }],
      ['/users?a=% without a credential', { target: '/users?a=%' }],
      ['/.well-known/jwks.json?a=%', { target: '/.well-known/jwks.json?a=%' }],
      ['/.well-known/jwks.json?%zz', { target: '/.well-known/jwks.json?%zz' }],
      ['POST /sessions?a=%', { method: 'POST', target: '/sessions?a=%', headers: [JSON_TYPE], body: login }],
      ['POST /tokens?%', { method: 'POST', target: '/tokens?%', headers: [JSON_TYPE], body: '{"refresh_token":"prt_x"}' }],
      ['/healthz?a=%', { target: '/healthz?a=%' }]
    ]
    for (const [label, request] of gatewayCases) await assertRefused(t, gateway, request, 400, 'malformed_query', `gateway ${label}`)
    const direct: Array<[string, string, RawRequest]> = [
      ['identity /.well-known/jwks.json?a=%', s.identity.publicUrl, { target: '/.well-known/jwks.json?a=%' }],
      ['identity POST /sessions?%zz', s.identity.publicUrl, { method: 'POST', target: '/sessions?%zz', headers: [JSON_TYPE], body: login }],
      ['identity admin /admin/users?a=%', s.identity.adminUrl, { target: '/admin/users?a=%', headers: [['authorization', `Bearer ${s.identity.adminToken}`]] }],
      ['upstream-mock /echo?a=%', s.mock.url, { target: '/echo?a=%' }],
      ['upstream-mock /users?per_page=%zz', s.mock.url, { target: '/users?per_page=%zz' }]
    ]
    for (const [label, url, request] of direct) assertProblem(t, await send(url, request), 400, 'malformed_query', label)
  })

  await t.test('a query is forwarded apart from the path, exactly as sent', async (t) => {
    for (const query of ['?x=/..', '?x=%2e%2e/', '?next=/admin', '?next=%2F..%2Fadmin&y=..%5c', '?a=1;b=2', '?q=%C0%AE&r=%ff&s=%00',
      "?q='\"<>`{}|^", '?a=%41&b=%7e', '?=&&a==']) {
      const answer = await echo(gateway, [], { target: `/echo${query}` })
      assertJson(t, answer, 200, `/echo${query}`)
      t.same([(answer.body as { path: string }).path, (answer.body as { search: string }).search], ['/echo', query],
        `/echo${query}: the path and the query reach the upstream unchanged`)
    }
    const aliased = await send(gateway.url, { target: '/utilisateurs?per_page=1&x=/../tasks', headers: [withKey] })
    assertJson(t, aliased, 200, 'an alias with a path-like query value')
  })

  await t.test('no process logged an error, no gateway an upstream failure', async (t) => {
    for (const server of [s.mock, s.identity, gateway, behindProxy]) {
      t.same(errorLines(server), [], `${server.name}: no error-level log line`)
    }
    t.same([upstreamFailureLines(gateway), upstreamFailureLines(behindProxy)], [0, 0], 'no upstream failure was logged')
  })

  await leaks.assertNoLeaks(t)
})
