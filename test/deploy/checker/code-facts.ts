import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import type { FastifyInstance, HTTPMethods } from 'fastify'
import type { TObject } from 'typebox'
import { buildConsole } from '../../../console/app.js'
import { ConsoleEnvSchema, loadConsoleConfig } from '../../../console/config.js'
import { buildGatewayServer, buildMetricsServer } from '../../../gateway/app.js'
import { GatewayEnvSchema, loadGatewayConfig } from '../../../gateway/config.js'
import { buildIdentity } from '../../../identity/app.js'
import { IdentityEnvSchema, loadIdentityConfig } from '../../../identity/config.js'
import { buildUpstreamMock } from '../../../upstream-mock/app.js'
import { loadUpstreamMockConfig, UpstreamMockEnvSchema } from '../../../upstream-mock/config.js'
import { REPO_ROOT } from '../../helpers/repo-root.js'

export { REPO_ROOT }

/** A port a service listens on, as its own config loader computes it from an environment. */
export interface Listener {
  name: string
  host: string
  port: number
  /** Must never be published or reachable from outside the private network. */
  private: boolean
  /**
   * Read by monitoring the deploy files do not run (Prometheus): private, and its
   * clients are a scraper's pods in the monitoring namespace, named by the policy.
   */
  scraped?: true
}

/** What a service's config says once loaded: its listeners and the settings deploy files depend on. */
export interface LoadedService {
  listeners: Listener[]
  shutdownGraceSeconds?: number
  databasePath?: string
  upstreamsFile?: string
}

export interface ServiceFacts {
  name: 'gateway' | 'identity' | 'upstream-mock' | 'console'
  /** The server's source file; its compiled path (dist/…js) is what containers run. */
  source: string
  schema: TObject
  /** The service's own loader: throws its ConfigError on a bad environment. */
  load: (env: Record<string, string>) => LoadedService
  /** Where an orchestrator asks whether to send traffic. */
  readinessPath: string
  /** Optional in the schema but required by a rule of the loader (under a default setting): each needs a stand-in too. */
  requiredByRule?: readonly string[]
}

/** An environment variable holding another service's URL, and what that listener must serve. */
export interface UrlReference {
  service: 'identity' | 'redis' | 'console'
  /** A route the caller uses there (gateway/auth/identity-client.ts): proves it is the right listener. */
  route?: { method: HTTPMethods, path: string }
}

/**
 * Variables outside every schema that deploy files may still set, each with the reason.
 * Anything else not in a service's schema is drift: a typo or a removed setting.
 */
export const ALLOWED_EXTRA_ENV: Readonly<Record<string, string>> = Object.freeze({
  NODE_ENV: 'set once in the image for the libraries that read it; no Portier schema does'
})

export const SERVICES: readonly ServiceFacts[] = Object.freeze([
  {
    name: 'gateway',
    source: 'gateway/server.ts',
    schema: GatewayEnvSchema,
    readinessPath: '/readyz',
    load: (env) => {
      const c = loadGatewayConfig(env)
      return {
        listeners: [
          { name: 'http', host: c.host, port: c.port, private: false },
          ...(c.metrics !== null ? [{ name: 'metrics', host: c.metrics.host, port: c.metrics.port, private: true, scraped: true } as const] : [])
        ],
        shutdownGraceSeconds: c.shutdownGraceMs / 1000,
        ...(c.plugin.upstreamsFile !== undefined ? { upstreamsFile: c.plugin.upstreamsFile } : {})
      }
    }
  },
  {
    name: 'identity',
    source: 'identity/server.ts',
    schema: IdentityEnvSchema,
    readinessPath: '/healthz',
    // Unless IDENTITY_SIGNING_KEY_ENCRYPTION is off.
    requiredByRule: ['IDENTITY_SIGNING_KEY_ENCRYPTION_KEY'],
    load: (env) => {
      const c = loadIdentityConfig(env)
      return {
        listeners: [
          { name: 'public', host: c.host, port: c.port, private: false },
          { name: 'admin', host: c.adminHost, port: c.adminPort, private: true }
        ],
        databasePath: c.databasePath
      }
    }
  },
  {
    name: 'console',
    source: 'console/server.ts',
    schema: ConsoleEnvSchema,
    readinessPath: '/healthz',
    load: (env) => {
      const c = loadConsoleConfig(env)
      // Private: browsers reach it through the gateways only (GATEWAY_CONSOLE_URL), never directly.
      return { listeners: [{ name: 'http', host: c.host, port: c.port, private: true }] }
    }
  },
  {
    name: 'upstream-mock',
    source: 'upstream-mock/server.ts',
    schema: UpstreamMockEnvSchema,
    readinessPath: '/healthz',
    load: (env) => {
      const c = loadUpstreamMockConfig(env)
      return { listeners: [{ name: 'http', host: c.host, port: c.port, private: false }] }
    }
  }
])

export const URL_REFERENCES: Readonly<Record<string, UrlReference>> = Object.freeze({
  IDENTITY_PUBLIC_URL: { service: 'identity', route: { method: 'GET', path: '/.well-known/jwks.json' } },
  IDENTITY_INTERNAL_URL: { service: 'identity', route: { method: 'POST', path: '/internal/keys/verify' } },
  // The gateways forward /console/* there (gateway/routing/route-table.ts).
  GATEWAY_CONSOLE_URL: { service: 'console', route: { method: 'GET', path: '/console/sign-in' } },
  // The console signs users in on identity's public listener and calls the admin API for the operator pages (console/identity-client.ts, console/operator/admin-client.ts).
  CONSOLE_IDENTITY_PUBLIC_URL: { service: 'identity', route: { method: 'POST', path: '/sessions' } },
  CONSOLE_IDENTITY_ADMIN_URL: { service: 'identity', route: { method: 'GET', path: '/admin/users' } },
  REDIS_URL: { service: 'redis' }
})

/** The container health check script (cli/healthcheck.ts). */
export const HEALTHCHECK_SOURCE = 'cli/healthcheck.ts'
/** Redis's port unless its command says `--port`. */
export const REDIS_DEFAULT_PORT = 6379

/** tsconfig: rootDir "." and outDir "dist", so `x/y.ts` compiles to `dist/x/y.js`. */
export function distPathOf (source: string): string {
  return `dist/${source.replace(/\.ts$/, '.js')}`
}

export interface CodeFacts {
  services: readonly ServiceFacts[]
  serviceByEntry: (this: CodeFacts, entry: string) => ServiceFacts | undefined
  /** Whether the service's app answers `method path` on that listener (a registered route). */
  serves: (service: string, listener: string, method: HTTPMethods, path: string) => boolean
  /** Production dependencies with install scripts (native builds), from package-lock.json. */
  nativeModules: string[]
  /** tsconfig.build.json "include": the folders `npm run build` compiles. */
  buildInclude: string[]
  /** package.json "engines.node" lowest major. */
  nodeMajor: number
  /** package.json scripts' commands. */
  scripts: Record<string, string>
  sourceExists: (path: string) => boolean
  close: () => Promise<void>
}

const discard = (): Writable => new Writable({ write (_chunk, _encoding, done) { done() } })
const SAMPLE_TOKEN = 'deploy-test-'.padEnd(48, 'x')

/** Builds each service's apps in process (nothing listens) to ask them which routes they serve. */
export async function loadCodeFacts (): Promise<CodeFacts> {
  const read = (path: string): any => JSON.parse(readFileSync(join(REPO_ROOT, path), 'utf8'))
  const dir = mkdtempSync(join(tmpdir(), 'portier-deploy-'))
  const identity = await buildIdentity(loadIdentityConfig({
    IDENTITY_DATABASE_PATH: join(dir, 'identity.db'),
    IDENTITY_ADMIN_TOKEN: SAMPLE_TOKEN,
    IDENTITY_SERVICE_TOKEN: SAMPLE_TOKEN,
    IDENTITY_SIGNING_KEY_ENCRYPTION_KEY: SAMPLE_TOKEN,
    LOG_LEVEL: 'silent'
  }), { logStream: discard() })
  const gateway = await buildGatewayServer(loadGatewayConfig({
    IDENTITY_SERVICE_TOKEN: SAMPLE_TOKEN,
    GATEWAY_UPSTREAMS_FILE: join(REPO_ROOT, 'gateway/upstreams.default.yaml'),
    GATEWAY_WATCH_UPSTREAMS: 'false',
    LOG_LEVEL: 'silent'
  }), { logStream: discard() })
  const gatewayMetrics = await buildMetricsServer({ logLevel: 'silent' }, gateway.portierGateway, { logStream: discard() })
  const mock = await buildUpstreamMock({ logLevel: 'silent', logStream: discard() })
  const consoleApp = await buildConsole(loadConsoleConfig({ CONSOLE_COOKIE_SECRET: SAMPLE_TOKEN, LOG_LEVEL: 'silent' }), { logStream: discard() })
  const apps: Record<string, Record<string, FastifyInstance>> = {
    gateway: { http: gateway as unknown as FastifyInstance, metrics: gatewayMetrics as unknown as FastifyInstance },
    identity: { public: identity.publicApp, admin: identity.adminApp },
    'upstream-mock': { http: mock },
    console: { http: consoleApp }
  }

  const lock = read('package-lock.json')
  const nativeModules = Object.entries(lock.packages as Record<string, { hasInstallScript?: boolean, dev?: boolean }>)
    .filter(([path, entry]) => path !== '' && entry.hasInstallScript === true && entry.dev !== true)
    .map(([path]) => path.replace(/^.*node_modules\//, ''))
    .sort()
  const pkg = read('package.json')
  const facts: CodeFacts = {
    services: SERVICES,
    // A method, so that a copy with other services (drift tests) finds among those.
    serviceByEntry (this: CodeFacts, entry: string) { return this.services.find((s) => distPathOf(s.source) === entry) },
    serves: (service, listener, method, path) => apps[service]?.[listener]?.hasRoute({ method, url: path }) ?? false,
    nativeModules,
    buildInclude: read('tsconfig.build.json').include as string[],
    nodeMajor: Number(/(\d+)/.exec(String(pkg.engines?.node ?? ''))?.[1] ?? NaN),
    scripts: pkg.scripts as Record<string, string>,
    sourceExists: (path) => existsSync(join(REPO_ROOT, path)),
    close: async () => {
      await Promise.all([identity.close(), gateway.close(), gatewayMetrics.close(), mock.close(), consoleApp.close()])
      rmSync(dir, { recursive: true, force: true })
    }
  }
  return facts
}
