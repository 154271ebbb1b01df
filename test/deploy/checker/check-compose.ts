import { posix } from 'node:path'
import { ConfigError } from '../../../common/config.js'
import { parseUpstreams } from '../../../gateway/routing/index.js'
import { checkHealthUrl, checkPortierContainer, checkServes, healthcheckUrl, listenerOnPort, type EnvSetting, type ResolvedContainer } from './check-containers.js'
import { DOCKERFILE } from './check-dockerfile.js'
import { distPathOf, REDIS_DEFAULT_PORT, URL_REFERENCES, type CodeFacts } from './code-facts.js'
import { claim, type DeployTree } from './deploy-files.js'
import { hostPort, inCidr } from './net.js'
import { bindPort, type HaproxySection } from './parse-haproxy.js'
import { asArray, isObject, type Node, type Problems } from './problems.js'

export const COMPOSE = 'deploy/compose.yaml'
const COMPOSE_DIR = 'deploy'
const ENV_EXAMPLE = 'deploy/.env.example'
const INTERPOLATION = /\$\{([A-Za-z_][A-Za-z0-9_]*)([^}]*)\}/g
const HAPROXY_CONFIG_DIR = '/usr/local/etc/haproxy'
/** Each service that reads the client's address from X-Forwarded-For, and the variable naming whom it believes. */
const TRUST_VARIABLES: Readonly<Record<string, string>> = { gateway: 'GATEWAY_TRUST_PROXY', identity: 'IDENTITY_TRUST_PROXY', console: 'CONSOLE_TRUST_PROXY' }

/** What one compose service is, once checked: where it listens, and for Portier, its resolved config. */
interface Endpoint {
  kind: 'portier' | 'redis'
  ports: number[]
  resolved?: ResolvedContainer
}

/** `host:port` → the compose service there and the port it listens on; reports what does not resolve. */
type Resolve = (file: string, where: string, address: string) => { service: string, endpoint: Endpoint, port: number } | null

function envOf (service: Node, where: string, problems: Problems): EnvSetting[] {
  const raw = service.environment
  const pairs: Array<[string, unknown]> = Array.isArray(raw)
    ? raw.map((item) => {
      const text = String(item)
      return [text.slice(0, text.indexOf('=')), text.slice(text.indexOf('=') + 1)]
    })
    : Object.entries(isObject(raw) ? raw : {})
  return pairs.map(([name, value]) => {
    const text = String(value ?? '')
    const place = `${where}.environment.${name}`
    const whole = new RegExp(`^\\$\\{${name}:\\?[^}]+\\}$`)
    if (whole.test(text)) return { name, literal: null, where: place }
    if (text.includes('${')) problems.add(COMPOSE, place, `interpolate only as \${${name}:?message}: the same name, and compose stops with the message when it is unset or empty`)
    return { name, literal: text, where: place }
  })
}

/** `source:target[:mode]` volume entries (short or long syntax). */
function mountsOf (service: Node): Array<{ source: string, target: string }> {
  return asArray(service.volumes).map((v) => {
    if (isObject(v)) return { source: String(v.source ?? ''), target: String(v.target ?? '') }
    const [source = '', target = ''] = String(v).split(':')
    return { source, target }
  })
}

function redisPort (command: unknown): number {
  const args = asArray(command).map(String)
  const at = args.indexOf('--port')
  return at === -1 ? REDIS_DEFAULT_PORT : Number(args[at + 1])
}

function words (section: HaproxySection, keyword: string): string[][] {
  return section.lines.filter((l) => l.words[0] === keyword).map((l) => l.words)
}

/**
 * compose.yaml against the code: each Portier service runs a server with an
 * environment its loader accepts, health checks on routes it serves, addresses that
 * reach the right listener of the right service, no published port but the load
 * balancer's, the identity database on a named volume, the gateways' upstreams file
 * valid, and HAProxy balancing over every gateway on its readiness route.
 */
export function checkCompose (tree: DeployTree, facts: CodeFacts, problems: Problems, override?: Node): void {
  const file = claim(tree, COMPOSE, 'yaml')
  if (file === undefined) {
    problems.add(COMPOSE, '', 'missing')
    return
  }
  const doc: Node = override ?? (file.docs[0] as Node)
  const services: Record<string, Node> = isObject(doc.services) ? doc.services : {}
  const builtImages = new Set(Object.values(services).filter((s) => s.build !== undefined).map((s) => s.image))
  const endpoints = new Map<string, Endpoint>()
  const haproxies: string[] = []

  for (const [name, service] of Object.entries(services)) {
    const where = `services.${name}`
    const image = String(service.image ?? '')
    const test = asArray(service.healthcheck?.test).map(String)
    if (test.length === 0 || test[0] === 'NONE') problems.add(COMPOSE, `${where}.healthcheck`, 'every service needs a health check (depends_on waits on it)')
    if (service.build !== undefined || builtImages.has(service.image)) {
      const build = service.build ?? Object.values(services).find((s) => s.image === service.image && s.build !== undefined)?.build
      if (posix.normalize(posix.join(COMPOSE_DIR, String(build?.context ?? '.'))) !== '.') problems.add(COMPOSE, `${where}.build.context`, 'the build context must be the repository root (the Dockerfile copies its sources)')
      if (build?.dockerfile !== DOCKERFILE) problems.add(COMPOSE, `${where}.build.dockerfile`, `must be ${DOCKERFILE} (relative to the context)`)
      if (service.env_file !== undefined) problems.add(COMPOSE, `${where}.env_file`, 'set variables in `environment` so their names can be checked')
      const command = Array.isArray(service.command) ? service.command.map(String) : null
      if (command === null) problems.add(COMPOSE, `${where}.command`, 'set the command in exec form: one image serves three services')
      const resolved = checkPortierContainer({ file: COMPOSE, where, command, env: envOf(service, where, problems) }, facts, problems)
      if (resolved === null) continue
      endpoints.set(name, { kind: 'portier', ports: resolved.loaded.listeners.map((l) => l.port), resolved })
      if (service.ports !== undefined) {
        const privates = resolved.loaded.listeners.filter((l) => l.private).map((l) => `${resolved.service.name}'s ${l.name} listener must never be published`)
        problems.add(COMPOSE, `${where}.ports`, `publishes ${JSON.stringify(service.ports)}: only the load balancer publishes a port${privates.map((p) => `; ${p}`).join('')}`)
      }
      if (test[0] === 'CMD') {
        const url = healthcheckUrl(COMPOSE, `${where}.healthcheck.test`, test.slice(1), problems)
        if (url !== null) {
          checkHealthUrl(COMPOSE, `${where}.healthcheck.test`, url, resolved, facts, problems)
          const path = new URL(url).pathname
          if (path !== resolved.service.readinessPath) problems.add(COMPOSE, `${where}.healthcheck.test`, `checks ${path}; ${resolved.service.name} is ready to serve when ${resolved.service.readinessPath} answers 2xx`)
        }
      } else if (test.length > 0) {
        problems.add(COMPOSE, `${where}.healthcheck.test`, 'use ["CMD", "node", "dist/cli/healthcheck.js", "<url>"] (the image has no shell tools)')
      }
    } else if (/^redis:/.test(image)) {
      endpoints.set(name, { kind: 'redis', ports: [redisPort(service.command)] })
    } else if (/^haproxy:/.test(image)) {
      haproxies.push(name)
    } else {
      problems.add(COMPOSE, `${where}.image`, `"${image}": the deploy test knows the Portier image, redis and haproxy; teach test/deploy/checker/check-compose.ts about this one`)
    }
  }

  const resolveAddress: Resolve = (file, from, address) => {
    const target = hostPort(address)
    const endpoint = target === null ? undefined : endpoints.get(target.host)
    if (target === null || endpoint === undefined) {
      problems.add(file, from, `${address}: "${target?.host ?? address}" is not a service of ${COMPOSE}`)
      return null
    }
    if (!endpoint.ports.includes(target.port)) {
      problems.add(file, from, `${address}: ${target.host} listens on ${endpoint.ports.join(', ')}, not ${target.port}`)
      return null
    }
    return { service: target.host, endpoint, port: target.port }
  }
  const ipOf = (name: string): string | undefined => {
    const networks = services[name]?.networks
    return isObject(networks) ? Object.values(networks).map((n) => (n as Node | null)?.ipv4_address).find((ip) => ip !== undefined) : undefined
  }

  const checkedUpstreams = new Set<string>()
  const gateways = [...endpoints].filter(([, e]) => e.resolved?.service.name === 'gateway').map(([name]) => name)
  const consoles = [...endpoints].filter(([, e]) => e.resolved?.service.name === 'console').map(([name]) => name)
  for (const service of facts.services) {
    if (![...endpoints.values()].some((e) => e.resolved?.service.name === service.name)) problems.add(COMPOSE, 'services', `none runs ${service.name} (node ${distPathOf(service.source)}): the stack would lack it`)
  }
  if (gateways.length < 2) problems.add(COMPOSE, 'services', `${gateways.length} gateway service(s): run at least two replicas behind the load balancer`)

  for (const [name, endpoint] of endpoints) {
    const resolved = endpoint.resolved
    if (resolved === undefined) continue
    const where = `services.${name}`
    const service = services[name] as Node
    const dependsOn: Node = isObject(service.depends_on) ? service.depends_on : {}
    for (const [variable, reference] of Object.entries(URL_REFERENCES)) {
      const setting = resolved.env.get(variable)
      if (setting?.literal == null) continue
      const target = resolveAddress(COMPOSE, setting.where, setting.literal)
      if (target === null) continue
      const kindOk = reference.service === 'redis' ? target.endpoint.kind === 'redis' : target.endpoint.resolved?.service.name === reference.service
      if (!kindOk) problems.add(COMPOSE, setting.where, `${setting.literal}: ${target.service} does not run ${reference.service}`)
      const listener = target.endpoint.resolved === undefined ? undefined : listenerOnPort(target.endpoint.resolved, target.port)
      if (kindOk && reference.route !== undefined && listener !== undefined && target.endpoint.resolved !== undefined) {
        checkServes(COMPOSE, setting.where, target.endpoint.resolved.service, listener, reference.route.method, reference.route.path, facts, problems)
      }
      if (dependsOn[target.service]?.condition !== 'service_healthy') problems.add(COMPOSE, `${where}.depends_on`, `${variable} points at ${target.service}: wait for it with condition: service_healthy`)
    }
    if ('REDIS_URL' in resolved.service.schema.properties && !resolved.env.has('REDIS_URL')) {
      problems.add(COMPOSE, `${where}.environment`, `REDIS_URL is not set: ${resolved.service.name} would keep caches and events in process, unshared between replicas`)
    }
    if (resolved.loaded.databasePath !== undefined) {
      const dir = posix.dirname(resolved.loaded.databasePath)
      const mount = mountsOf(service).find((m) => m.target === dir)
      const named = isObject(doc.volumes) && mount !== undefined && mount.source in doc.volumes
      if (!named) problems.add(COMPOSE, `${where}.volumes`, `IDENTITY_DATABASE_PATH is in ${dir}: mount a named volume (declared under "volumes") there, or the database dies with the container`)
    }
    if (resolved.loaded.upstreamsFile !== undefined) checkUpstreamsMount(tree, where, service, resolved.loaded.upstreamsFile, resolveAddress, checkedUpstreams, problems)
    // Client IPs survive the hops only if each hop trusts the ones before it: the console
    // is reached through HAProxy and a gateway, and calls identity on the browser's behalf.
    const trustVariable = TRUST_VARIABLES[resolved.service.name]
    if (trustVariable !== undefined) {
      const hops = resolved.service.name === 'gateway' ? haproxies : resolved.service.name === 'console' ? [...haproxies, ...gateways] : [...haproxies, ...gateways, ...consoles]
      const trusted = (resolved.env.get(trustVariable)?.literal ?? '').split(',').map((s) => s.trim())
      for (const hop of hops) {
        const ip = ipOf(hop)
        if (ip === undefined) problems.add(COMPOSE, `services.${hop}.networks`, `needs a fixed ipv4_address: ${name} trusts it as a proxy (${trustVariable})`)
        else if (!trusted.includes(ip)) problems.add(COMPOSE, `${where}.environment.${trustVariable}`, `does not trust ${hop} (${ip}): the client IP would be lost`)
      }
    }
  }

  for (const name of haproxies) checkHaproxy(tree, name, services[name] as Node, gateways, resolveAddress, facts, problems)

  for (const [name, service] of Object.entries(services)) {
    for (const [target, condition] of Object.entries(isObject(service.depends_on) ? service.depends_on : {})) {
      if (services[target] === undefined) problems.add(COMPOSE, `services.${name}.depends_on.${target}`, 'no such service')
      else if ((condition as Node)?.condition === 'service_healthy' && services[target]?.healthcheck === undefined) problems.add(COMPOSE, `services.${name}.depends_on.${target}`, `${target} has no health check to wait for`)
    }
  }

  // Fixed addresses: inside the subnet, outside the range Docker hands out dynamically.
  for (const [netName, network] of Object.entries(isObject(doc.networks) ? doc.networks : {})) {
    const pools = asArray((network as Node | null)?.ipam?.config)
    for (const [name, service] of Object.entries(services)) {
      const ip = isObject(service.networks) ? (service.networks[netName] as Node | null)?.ipv4_address : undefined
      if (ip === undefined) continue
      const pool = pools.find((p) => inCidr(ip, String(p.subnet)))
      if (pool === undefined) problems.add(COMPOSE, `services.${name}.networks.${netName}.ipv4_address`, `${ip} is outside the network's subnets`)
      else if (pool.ip_range === undefined || inCidr(ip, String(pool.ip_range))) problems.add(COMPOSE, `services.${name}.networks.${netName}.ipv4_address`, `${ip} can be handed to another container: set ip_range to a part of the subnet without it`)
    }
  }

  checkEnvExample(tree, interpolations(doc), problems)
}

function checkUpstreamsMount (tree: DeployTree, where: string, service: Node, path: string,
  resolve: Resolve, checked: Set<string>, problems: Problems): void {
  const mount = mountsOf(service).find((m) => path.startsWith(`${m.target}/`) && m.source.startsWith('.'))
  if (mount === undefined) {
    problems.add(COMPOSE, `${where}.environment.GATEWAY_UPSTREAMS_FILE`, `${path} is not inside a folder mounted from deploy/`)
    return
  }
  const hostPath = posix.join(COMPOSE_DIR, mount.source, path.slice(mount.target.length + 1))
  if (!tree.files.has(hostPath)) {
    problems.add(COMPOSE, `${where}.volumes`, `GATEWAY_UPSTREAMS_FILE ${path} is ${hostPath}, which does not exist`)
    return
  }
  // Both gateways mount the same file: report its drift once.
  if (checked.has(hostPath)) return
  checked.add(hostPath)
  checkUpstreamsFile(tree, hostPath, (upstream, target) => resolve(hostPath, `upstreams.${upstream}.target`, target) !== null, problems)
}

/** A deploy upstreams file loads with the gateway's own parser and checks, strictly, and each target is reachable. */
export function checkUpstreamsFile (tree: DeployTree, hostPath: string, reachable: (upstream: string, target: string) => boolean, problems: Problems): void {
  const file = claim(tree, hostPath, 'yaml')
  if (file === undefined) {
    problems.add(hostPath, '', 'missing')
    return
  }
  try {
    const { config } = parseUpstreams(file.text, hostPath, 'yaml', { strict: true })
    for (const upstream of config.upstreams) reachable(upstream.name, upstream.target)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    for (const line of err.problems) problems.add(hostPath, '', `the gateway refuses it: ${line}`)
  }
}

function checkHaproxy (tree: DeployTree, name: string, service: Node, gateways: string[], resolveAddress: Resolve, facts: CodeFacts, problems: Problems): void {
  const where = `services.${name}`
  const mount = mountsOf(service).find((m) => m.target === HAPROXY_CONFIG_DIR)
  const path = mount === undefined ? '' : posix.join(COMPOSE_DIR, mount.source, 'haproxy.cfg')
  const cfg = claim(tree, path, 'haproxy')
  if (cfg === undefined) {
    problems.add(COMPOSE, `${where}.volumes`, `mount a folder of deploy/ holding haproxy.cfg at ${HAPROXY_CONFIG_DIR}`)
    return
  }
  const sections = cfg.sections
  const frontends = sections.filter((s) => s.kind === 'frontend' || s.kind === 'listen')
  const serving = frontends.filter((s) => words(s, 'default_backend').length > 0 || words(s, 'use_backend').length > 0)
  const servingPorts = serving.flatMap((s) => words(s, 'bind').map((w) => bindPort(w[1] ?? '')))
  for (const spec of asArray(service.ports).map(String)) {
    const containerPort = Number(spec.slice(spec.lastIndexOf(':') + 1).replace(/\/tcp$/, ''))
    if (!servingPorts.includes(containerPort)) problems.add(COMPOSE, `${where}.ports`, `"${spec}" publishes ${containerPort}; ${path} serves on ${servingPorts.join(', ')}`)
  }
  if (!sections.some((s) => s.lines.some((l) => l.words[0] === 'option' && l.words[1] === 'forwardfor'))) {
    problems.add(path, '', '"option forwardfor" is missing: the gateways read the client IP from X-Forwarded-For')
  }
  const backendNames = new Set(serving.flatMap((s) => [...words(s, 'default_backend'), ...words(s, 'use_backend')].map((w) => w[1])))
  const servers = new Set<string>()
  for (const backend of sections.filter((s) => s.kind === 'backend' && backendNames.has(s.name ?? ''))) {
    const at = `backend ${backend.name ?? ''}`
    const send = words(backend, 'http-check').find((w) => w[1] === 'send')
    const old = words(backend, 'option').find((w) => w[1] === 'httpchk' && w[3] !== undefined)
    const checkPath = send !== undefined ? send[send.indexOf('uri') + 1] : old?.[3]
    if (checkPath === undefined) problems.add(path, at, 'no HTTP health check: a gateway that is not ready (no JWKS yet) would get traffic')
    for (const line of backend.lines.filter((l) => l.words[0] === 'server')) {
      const from = `line ${line.line}`
      const target = resolveAddress(path, from, line.words[2] ?? '')
      const resolved = target?.endpoint.resolved
      if (target === null) continue
      servers.add(target.service)
      if (resolved?.service.name !== 'gateway') {
        problems.add(path, from, `${line.words[2] ?? ''} is not a gateway`)
        continue
      }
      if (checkPath === undefined) continue
      if (checkPath !== resolved.service.readinessPath) problems.add(path, from, `checked on ${checkPath}; a gateway is ready when ${resolved.service.readinessPath} answers 2xx`)
      const listener = listenerOnPort(resolved, target.port)
      if (listener?.private === true) problems.add(path, from, `${line.words[2] ?? ''}: the gateway's ${listener.name} listener is private; the load balancer sends traffic to its public listener`)
      if (listener !== undefined) checkServes(path, from, resolved.service, listener, 'GET', checkPath, facts, problems)
    }
  }
  for (const gateway of gateways) {
    if (!servers.has(gateway)) problems.add(path, '', `the gateway service "${gateway}" is not a server of the load balancer`)
  }
  // compose.yaml's health check of the balancer asks its monitor frontend.
  const test = asArray(service.healthcheck?.test).map(String)
  const url = test.find((w) => w.startsWith('http://'))
  if (url !== undefined) {
    const parsed = new URL(url)
    const monitor = frontends.find((s) => words(s, 'bind').some((w) => bindPort(w[1] ?? '') === Number(parsed.port)))
    if (monitor === undefined || words(monitor, 'monitor-uri')[0]?.[1] !== parsed.pathname) {
      problems.add(COMPOSE, `${where}.healthcheck.test`, `${url}: no frontend of ${path} binds that port with monitor-uri ${parsed.pathname}`)
    }
  }
}

/** The variables compose interpolates: `${NAME…}` in any value (comments do not count). */
function interpolations (value: unknown, found = new Set<string>()): Set<string> {
  if (typeof value === 'string') for (const m of value.matchAll(INTERPOLATION)) found.add(m[1] as string)
  else if (Array.isArray(value)) for (const v of value) interpolations(v, found)
  else if (isObject(value)) for (const v of Object.values(value)) interpolations(v, found)
  return found
}

/** Every `${VAR}` of compose.yaml is in .env.example, and the other way round. */
function checkEnvExample (tree: DeployTree, used: Set<string>, problems: Problems): void {
  const example = claim(tree, ENV_EXAMPLE, 'env-example')
  if (example === undefined) {
    problems.add(ENV_EXAMPLE, '', 'missing: it lists the variables compose.yaml interpolates')
    return
  }
  const listed = new Set(example.entries.map((e) => e.name))
  for (const name of used) if (!listed.has(name)) problems.add(ENV_EXAMPLE, '', `${name} is interpolated by ${COMPOSE} and missing here`)
  for (const entry of example.entries) {
    if (!used.has(entry.name)) problems.add(ENV_EXAMPLE, `line ${entry.line}`, `${entry.name} is not used by ${COMPOSE}`)
  }
}
