import { Type } from 'typebox'

/** Where Portier's Redis is: one server (possibly behind a proxy), or a Redis Cluster found from seed nodes. */
export type RedisTarget =
  | { mode: 'standalone', url: string }
  | { mode: 'cluster', nodes: Array<{ host: string, port: number }>, username?: string, password?: string, tls: boolean }

/**
 * The two environment variables that say where Redis is, for every service that uses
 * it: one schema, so identity and the gateway read the same names the same way. `use`
 * says what the service keeps there, `unset` what it does without.
 */
export function redisEnvProperties (use: string, unset: string) {
  return {
    REDIS_URL: Type.Optional(Type.String({ minLength: 1, description: `Redis for ${use} (redis:// or rediss://…). Unset, with REDIS_CLUSTER_NODES unset too: ${unset}` })),
    REDIS_CLUSTER_NODES: Type.Optional(Type.String({ minLength: 1, description: 'A Redis Cluster instead of REDIS_URL: comma-separated seed nodes, host:port or redis:// / rediss:// URLs (for a password and TLS); the other nodes are discovered.' }))
  }
}

/** The names the two settings have where they were read (environment variables or plugin options). */
export interface RedisFieldNames { url: string, clusterNodes: string }
export const REDIS_ENV_NAMES: RedisFieldNames = { url: 'REDIS_URL', clusterNodes: 'REDIS_CLUSTER_NODES' }

const SCHEMES = new Set(['redis:', 'rediss:'])
const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/

/** A setting as it may be shown in an error: credentials never are. */
function shown (value: string): string {
  return JSON.stringify(value.replace(/^([a-z]+:\/\/)?.*@/i, '$1***@'))
}

function parsePort (text: string): number | null {
  const port = Number(text)
  return Number.isInteger(port) && port >= 1 && port <= 65_535 ? port : null
}

interface SeedNode { host: string, port: number, username: string, password: string, tls: boolean }

function parseSeed (entry: string): SeedNode | string {
  if (!entry.includes('://')) {
    const match = HOST_PORT.exec(entry)
    const port = match === null ? null : parsePort(match[2] as string)
    if (match === null || port === null) return 'is not host:port or a redis:// URL'
    return { host: (match[1] as string).replace(/^\[|\]$/g, ''), port, username: '', password: '', tls: false }
  }
  let url: URL
  try {
    url = new URL(entry)
  } catch {
    return 'is not a valid URL'
  }
  if (!SCHEMES.has(url.protocol)) return 'must use redis:// or rediss://'
  // A cluster has one database (0), so a path could only be a mistake.
  if (url.pathname !== '' && url.pathname !== '/' && url.pathname !== '/0') return 'must not name a database: a cluster has only database 0'
  const port = url.port === '' ? 6379 : parsePort(url.port)
  if (url.hostname === '' || port === null) return 'must have a host and a port'
  return {
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port,
    username: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
    tls: url.protocol === 'rediss:'
  }
}

function parseCluster (list: string, name: string): { target?: RedisTarget, problems: string[] } {
  const entries = list.split(',').map((e) => e.trim())
  const problems: string[] = []
  const seeds: SeedNode[] = []
  entries.forEach((entry, i) => {
    const where = `${name}: node ${i + 1} of ${entries.length}`
    if (entry === '') { problems.push(`${where} is empty`); return }
    const seed = parseSeed(entry)
    if (typeof seed === 'string') problems.push(`${where} (${shown(entry)}) ${seed}`)
    else seeds.push(seed)
  })
  if (problems.length > 0) return { problems }
  const first = seeds[0] as SeedNode
  // Every node of a cluster takes the same credentials and TLS; seeds that disagree are a mistake.
  if (seeds.some((s) => s.username !== first.username || s.password !== first.password || s.tls !== first.tls)) {
    return { problems: [`${name}: every node must have the same scheme (redis:// or rediss://) and credentials`] }
  }
  return {
    problems,
    target: {
      mode: 'cluster',
      nodes: seeds.map(({ host, port }) => ({ host, port })),
      ...(first.username !== '' ? { username: first.username } : {}),
      ...(first.password !== '' ? { password: first.password } : {}),
      tls: first.tls
    }
  }
}

function checkUrl (url: string, names: RedisFieldNames): string[] {
  let parsed: URL | null = null
  try { parsed = new URL(url) } catch {}
  if (parsed === null || !SCHEMES.has(parsed.protocol) || parsed.hostname === '') {
    return [`${names.url}: ${shown(url)} is not a redis:// or rediss:// URL (a Redis Cluster's nodes go in ${names.clusterNodes})`]
  }
  return []
}

/**
 * Where Redis is, from the two settings (either may be absent, not both present):
 * `target` is undefined when neither is set, `problems` names the setting at fault.
 * Cluster nodes come as one comma-separated string (environment) or a list (options).
 */
export function parseRedisTarget (
  settings: { url?: string | undefined, clusterNodes?: string | string[] | undefined },
  names: RedisFieldNames = REDIS_ENV_NAMES
): { target?: RedisTarget, problems: string[] } {
  const { url, clusterNodes } = settings
  if (url !== undefined && clusterNodes !== undefined) {
    return { problems: [`${names.url} and ${names.clusterNodes}: set one of them, not both (${names.clusterNodes} is for a Redis Cluster)`] }
  }
  if (url !== undefined) {
    const problems = checkUrl(url, names)
    return problems.length > 0 ? { problems } : { problems, target: { mode: 'standalone', url } }
  }
  if (clusterNodes !== undefined) return parseCluster(Array.isArray(clusterNodes) ? clusterNodes.join(',') : clusterNodes, names.clusterNodes)
  return { problems: [] }
}
