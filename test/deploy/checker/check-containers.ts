import type { HTTPMethods } from 'fastify'
import { ConfigError } from '../../../common/config.js'
import { ALLOWED_EXTRA_ENV, HEALTHCHECK_SOURCE, distPathOf, type CodeFacts, type Listener, type LoadedService, type ServiceFacts } from './code-facts.js'
import { SECRET_NAME, type Problems } from './problems.js'

/** One environment variable as a deploy file sets it. */
export interface EnvSetting {
  name: string
  /** The literal value, or null when it comes from a secret (interpolation, secretKeyRef). */
  literal: string | null
  where: string
}

/** A container of the Portier image, as compose.yaml or a manifest describes it. */
export interface PortierContainer {
  file: string
  where: string
  command: string[] | null
  env: EnvSetting[]
}

export interface ResolvedContainer {
  service: ServiceFacts
  loaded: LoadedService
  env: Map<string, EnvSetting>
}

/** Stands in for a secret's value when loading a config: long enough for every minLength. */
const SECRET_PLACEHOLDER = 's'.repeat(64)
const ANY_INTERFACE = new Set(['0.0.0.0', '::'])

/** The service a command runs: `node dist/<service>/server.js [flags]`. */
export function serviceOfCommand (command: string[] | null, facts: CodeFacts): ServiceFacts | undefined {
  if (command === null || command[0] !== 'node' || command[1] === undefined) return undefined
  return facts.serviceByEntry(command[1])
}

/**
 * The checks every Portier container gets, in compose and Kubernetes alike: its
 * command runs a server, each variable it sets is one that service reads, no secret
 * is a literal, and the service's own loader accepts the environment; its listeners
 * bind every interface (a container's loopback is unreachable from its neighbours).
 */
export function checkPortierContainer (c: PortierContainer, facts: CodeFacts, problems: Problems): ResolvedContainer | null {
  const service = serviceOfCommand(c.command, facts)
  if (service === undefined) {
    const entries = facts.services.map((s) => `node ${distPathOf(s.source)}`).join(', ')
    problems.add(c.file, `${c.where}.command`, `${JSON.stringify(c.command)} runs no Portier server: expected one of ${entries}`)
    return null
  }
  const names = new Set(Object.keys(service.schema.properties))
  const env = new Map<string, EnvSetting>()
  for (const setting of c.env) {
    if (env.has(setting.name)) problems.add(c.file, setting.where, 'set twice')
    env.set(setting.name, setting)
    if (!names.has(setting.name) && ALLOWED_EXTRA_ENV[setting.name] === undefined) {
      problems.add(c.file, setting.where, `${setting.name} is not read by ${service.name} (not in its env schema, ${service.source.replace('server.ts', 'config.ts')})`)
    }
    if (SECRET_NAME.test(setting.name) && setting.literal !== null) {
      problems.add(c.file, setting.where, `${setting.name} is a credential: take it from a secret, never a literal value`)
    }
  }
  const required = (service.schema.required ?? []) as string[]
  for (const name of required) {
    const property = service.schema.properties[name] as { default?: unknown } | undefined
    if (property?.default === undefined && !env.has(name)) problems.add(c.file, c.where, `${name} is required by ${service.name} and not set`)
  }
  const values: Record<string, string> = {}
  for (const [name, setting] of env) values[name] = setting.literal ?? SECRET_PLACEHOLDER
  let loaded: LoadedService
  try {
    loaded = service.load(values)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    for (const line of err.problems) problems.add(c.file, c.where, `${service.name} refuses this environment: ${line}`)
    return null
  }
  for (const listener of loaded.listeners) {
    if (!ANY_INTERFACE.has(listener.host)) {
      problems.add(c.file, c.where, `${service.name}'s ${listener.name} listener binds ${listener.host}: unreachable from other containers; set it to 0.0.0.0`)
    }
  }
  return { service, loaded, env }
}

export function listenerOnPort (resolved: ResolvedContainer, port: number): Listener | undefined {
  return resolved.loaded.listeners.find((l) => l.port === port)
}

/**
 * A health check URL run inside the container (`node dist/cli/healthcheck.js <url>`):
 * loopback, on one of the service's listeners, on a route that listener serves.
 */
export function checkHealthUrl (file: string, where: string, url: string, resolved: ResolvedContainer, facts: CodeFacts, problems: Problems): void {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    problems.add(file, where, `${url} is not a URL`)
    return
  }
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(parsed.hostname)) problems.add(file, where, `${url}: a health check runs inside the container: use 127.0.0.1`)
  const port = Number(parsed.port === '' ? 80 : parsed.port)
  const listener = listenerOnPort(resolved, port)
  if (listener === undefined) {
    problems.add(file, where, `${url}: ${resolved.service.name} listens on ${describeListeners(resolved)}, not ${port}`)
    return
  }
  checkServes(file, where, resolved.service, listener, 'GET', parsed.pathname, facts, problems)
}

export function checkServes (file: string, where: string, service: ServiceFacts, listener: Listener, method: HTTPMethods, path: string, facts: CodeFacts, problems: Problems): void {
  if (!facts.serves(service.name, listener.name, method, path)) {
    problems.add(file, where, `${service.name} does not serve ${method} ${path} on its ${listener.name} listener (port ${listener.port})`)
  }
}

/** The health check command of the image: `node dist/cli/healthcheck.js <url>`; returns the URL. */
export function healthcheckUrl (file: string, where: string, command: string[], problems: Problems): string | null {
  const script = distPathOf(HEALTHCHECK_SOURCE)
  if (command.length !== 3 || command[0] !== 'node' || command[1] !== script) {
    problems.add(file, where, `${JSON.stringify(command)}: expected ["node", "${script}", "<url>"]`)
    return null
  }
  return command[2] as string
}

export function describeListeners (resolved: ResolvedContainer): string {
  return resolved.loaded.listeners.map((l) => `${l.port} (${l.name})`).join(', ')
}
