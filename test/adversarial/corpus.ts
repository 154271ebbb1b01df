import type { Test } from 'tap'
import { createHash } from 'node:crypto'
import { bytesToBase62 } from '../../common/random.js'
import type { GatewayOptionsInput } from '../../gateway/options.js'
import { assertProblem } from '../helpers/assert.js'
import { startStack, type Stack, type TestGateway } from '../helpers/gateway.js'
import { metricSum } from '../helpers/gateway-auth.js'
import { http } from '../helpers/http.js'
import { watchForLeaks, type LeakWatch } from '../helpers/leak-watch.js'
import { requestBytes, socketRequest, type SocketAnswer } from '../helpers/raw-socket.js'
import type { SessionTokens } from '../helpers/session-setup.js'

/**
 * The bad-input corpus: each case is one request written byte for byte to
 * the gateway's socket, with the answer it must get. The runner checks every case the
 * same way: the status and problem code (problem+json), that no secret of the stack
 * or of the request comes back, which upstream (if any) answered, and that no state
 * changed anywhere: the upstream-mock's records and identity's users, sessions, keys
 * and roles are exactly what they were before the corpus ran.
 */

/** Who may answer a case: the gateway alone, or an upstream it forwarded the request to. */
export type Reaches = 'none' | 'backoffice' | 'identity'

export interface BadInput {
  name: string
  method?: string
  /** The request target, sent as written (a Buffer for bytes that are not text). */
  target?: string | Buffer
  /** Header lines as sent, in order, duplicates kept; `host` and `connection: close` come first. */
  headers?: Array<[string, string | Buffer]>
  /** Sent as is; `content-length` is added unless the headers frame the body themselves. */
  body?: string | Buffer
  /** The whole request, for bytes the fields above cannot describe. */
  raw?: (host: string) => Buffer
  status: number
  /**
   * The problem code; null when the server must close the connection without answering;
   * `bare` for the one answer Node's HTTP server writes itself, before any Fastify code
   * runs: an empty 400 to an HTTP/1.1 request without Host.
   */
  code: string | null | 'bare'
  reaches: Reaches
  /** Secrets this request carries beyond the stack's own (all are checked). */
  sends?: string[]
  /** Case-specific assertions on the answer. */
  check?: (t: Test, answer: SocketAnswer) => void
}

export interface Key { id: string, key: string }

export interface Corpus {
  stack: Stack
  gateway: TestGateway
  leaks: LeakWatch
  /** users:list only; every tasks permission; the mock's debugging routes. */
  keys: { users: Key, tasks: Key, debug: Key }
  /** ADA's session (role reader: users:list), opened before the corpus runs. */
  tokens: SessionTokens
  /** Every secret of the stack: the answers must never hold one. */
  secrets: string[]
  /** Another gateway on the same stack, its logs watched for leaks. */
  addGateway: (options: Partial<GatewayOptionsInput>) => Promise<TestGateway>
  /** What must never change: the mock's records, identity's users, sessions, keys and roles. */
  state: () => Promise<unknown>
  send: (c: BadInput, gateway?: TestGateway) => Promise<SocketAnswer>
}

export const PERMISSIONS = {
  users: ['users:list'],
  tasks: ['tasks:create', 'tasks:list', 'tasks:read', 'tasks:update'],
  debug: ['debug:read', 'debug:write']
} as const

/** A key body with the checksum identity would give it: isolates a wrong prefix or length from a wrong checksum. */
export const withChecksum = (body: string): string => body + bytesToBase62(createHash('sha256').update(body).digest().subarray(0, 8), 6)

/** Members whose value moves when a credential is used, not when anything is written. */
const USE_BOOKKEEPING = new Set(['last_used_at', 'last_used_route', 'last_used_ip', 'use_count', 'old_secret_use_count', 'old_secret_last_used_at'])

function withoutBookkeeping (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutBookkeeping)
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(Object.entries(value).filter(([name]) => !USE_BOOKKEEPING.has(name)).map(([name, v]) => [name, withoutBookkeeping(v)]))
}

/**
 * The stack every corpus file runs on: startStack, three API keys and a session of
 * ADA, a leak watch over both services' logs. Identity's per-IP login throttle is
 * raised so that the corpus's failed logins answer 401, not 429, whatever their number.
 */
export async function startCorpus (t: Test): Promise<Corpus> {
  const stack = await startStack(t, { env: { IDENTITY_LOGIN_MAX_FAILURES_PER_IP: '10000' } })
  const leaks = watchForLeaks()
  leaks.source({ name: 'gateway', text: stack.gateway.logText })
  leaks.source({ name: 'identity', text: stack.logText })
  const keys = {
    users: await stack.createKey([...PERMISSIONS.users]),
    tasks: await stack.createKey([...PERMISSIONS.tasks]),
    debug: await stack.createKey([...PERMISSIONS.debug])
  }
  const tokens = await stack.login()
  const secrets = [stack.user.password, stack.adminToken, stack.serviceToken, keys.users.key, keys.tasks.key, keys.debug.key,
    tokens.access_token, tokens.refresh_token]
  leaks.secret(...secrets)

  let gateways = 1
  const mock = async (path: string): Promise<unknown> => (await http(`${stack.upstreamUrl}${path}`)).body
  const admin = async (path: string): Promise<unknown> => (await stack.admin('GET', path)).body

  return {
    stack,
    gateway: stack.gateway,
    leaks,
    keys,
    tokens,
    secrets,
    async addGateway (options) {
      const gateway = await stack.addGateway(options)
      leaks.source({ name: `gateway ${++gateways}`, text: gateway.logText })
      return gateway
    },
    async state () {
      const [users, tasks, meetings, task1, user1, identityUsers, sessions, apiKeys, roles] = await Promise.all([
        mock('/users?per_page=1'), mock('/tasks?per_page=1'), mock('/meetings?per_page=1'), mock('/tasks/1'), mock('/users/1'),
        admin('/admin/users'), admin('/admin/sessions'), admin('/admin/keys'), admin('/admin/roles')
      ]) as Array<Record<string, any>>
      return withoutBookkeeping({
        mock: { users: users?.meta, tasks: tasks?.meta, meetings: meetings?.meta, task1, user1 },
        identity: { users: identityUsers, sessions, keys: apiKeys, roles }
      })
    },
    async send (c, gateway = stack.gateway) {
      const host = new URL(gateway.url).host
      if (c.raw !== undefined) return await socketRequest(gateway.url, c.raw(host))
      const headers: Array<[string, string | Buffer]> = [['host', host], ['connection', 'close'], ...(c.headers ?? [])]
      const framed = headers.some(([name]) => /^(content-length|transfer-encoding)$/i.test(name))
      if (c.body !== undefined && !framed) headers.push(['content-length', String(Buffer.byteLength(c.body))])
      const method = Buffer.from(`${c.method ?? 'GET'} `)
      const target = typeof c.target === 'string' ? Buffer.from(c.target, 'latin1') : c.target ?? Buffer.from('/')
      return await socketRequest(gateway.url, requestBytes(Buffer.concat([method, target, Buffer.from(' HTTP/1.1')]), headers, c.body), 30_000)
    }
  }
}

/** How many answers `gateway` has had from each upstream (the proxy's duration histogram counts them). */
async function upstreamAnswers (gateway: TestGateway): Promise<Record<Exclude<Reaches, 'none'>, number>> {
  const [backoffice, identity] = await Promise.all(['backoffice', 'identity'].map(async (upstream) =>
    await metricSum(gateway, 'portier_gateway_upstream_duration_seconds_count', { upstream })))
  return { backoffice: backoffice ?? 0, identity: identity ?? 0 }
}

/** Shorter values (an empty key, `ptk_`) are not secrets: any text may hold them. */
const SHORTEST_SECRET = 8

/** The answer as one text (status line apart): headers and body, where an echoed secret would show. */
const answerText = (answer: SocketAnswer): string => `${answer.rawHeaders.map(([n, v]) => `${n}: ${v}`).join('\n')}\n${answer.text}`

/**
 * Runs each case as its own subtest through `gateway` (the stack's by default). The
 * state is read before the first case and after every case, and must never move.
 */
export async function runCorpus (t: Test, corpus: Corpus, cases: BadInput[], gateway: TestGateway = corpus.gateway): Promise<void> {
  let baseline = await corpus.state()
  for (const c of cases) {
    await t.test(c.name, async (t) => {
      corpus.leaks.secret(...(c.sends ?? []))
      const before = await upstreamAnswers(gateway)
      const answer = await corpus.send(c, gateway)
      if (c.code === null) {
        t.equal(answer.answered, false, 'the connection is closed without an answer', { status: answer.status, text: answer.text })
      } else if (c.code === 'bare') {
        t.equal(answer.status, c.status, `Node answers ${c.status} itself`)
        t.same([answer.text, answer.headers.connection], ['', 'close'], 'with no body, and closes the connection')
      } else {
        assertProblem(t, answer, c.status, c.code)
      }
      const text = answerText(answer)
      const echoed = [...corpus.secrets, ...(c.sends ?? [])].filter((secret) => secret.length >= SHORTEST_SECRET && text.includes(secret))
      t.equal(echoed.length, 0, 'the answer echoes no secret', { echoed: echoed.map((s) => `${s.slice(0, 6)}…`) })
      const after = await upstreamAnswers(gateway)
      const expected = { ...before, ...(c.reaches !== 'none' ? { [c.reaches]: before[c.reaches] + 1 } : {}) }
      t.same(after, expected, c.reaches === 'none' ? 'no upstream saw the request' : `only ${c.reaches} saw the request, once`)
      if (c.reaches !== 'backoffice') t.equal(answer.headers['x-upstream-principal'], undefined, 'the back-office upstream did not answer')
      c.check?.(t, answer)
      const state = await corpus.state()
      t.same(state, baseline, 'no state changed')
      // A change is charged to the case that made it, not to every case after it.
      baseline = state
    })
  }
}

/** The Object.prototype members a pollution attempt would add: checked in-process, where the gateway runs. */
export function assertPrototypeClean (t: Test, ...names: string[]): void {
  const probe = {} as Record<string, unknown>
  t.same(names.filter((name) => probe[name] !== undefined), [], 'Object.prototype gained no member')
}
