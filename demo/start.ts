import closeWithGrace from 'close-with-grace'
import { ConfigError } from '../common/config.js'
import { createMemoryEventBus } from '../common/event-bus.js'
import { useLogFormat } from '../common/log-destination.js'
import { buildConsole } from '../console/app.js'
import { loadConsoleConfig } from '../console/config.js'
import { buildGatewayServer, buildMetricsServer } from '../gateway/app.js'
import { loadGatewayConfig } from '../gateway/config.js'
import { buildIdentity } from '../identity/app.js'
import { loadIdentityConfig } from '../identity/config.js'
import { runAs, systemContext } from '../identity/services/audit-context.js'
import { credentialsFileBeside, databasePathOf } from '../identity/store/credentials-file.js'
import { buildUpstreamMock } from '../upstream-mock/app.js'
import { loadUpstreamMockConfig } from '../upstream-mock/config.js'
import { firstStartBanner, laterStartBanner, type DemoUrls } from './banner.js'
import { credentialsFor } from './credentials.js'
import { DEMO_KEY_LIFETIME_DAYS, seedDemoAccounts } from './seed.js'

/** A one-process start answers on loopback unless told otherwise: it prints secrets, and is not a deployment. */
const LOOPBACK = '127.0.0.1'
/**
 * The gateway reaches identity over loopback (it runs in this process), and adds the
 * client's address to X-Forwarded-For: identity trusts that hop, so that login
 * throttling and sessions see each client rather than one bucket for everyone.
 */
const TRUST_THE_IN_PROCESS_GATEWAY = 'loopback'

function urlOf (host: string, port: number): string {
  const reachable = host === '0.0.0.0' || host === '::' ? LOOPBACK : host
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`
}

/** Runs every loader, so that one start reports the bad variables of all three services at once. */
function collectProblems<T extends Record<string, () => unknown>> (loaders: T): { [K in keyof T]: ReturnType<T[K]> } {
  const problems: string[] = []
  const results: Record<string, unknown> = {}
  for (const [name, load] of Object.entries(loaders)) {
    try {
      results[name] = load()
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err
      problems.push(...err.problems)
    }
  }
  if (problems.length > 0) throw new ConfigError('environment of the one-process start', [...new Set(problems)])
  return results as { [K in keyof T]: ReturnType<T[K]> }
}

/**
 * Each service's own configuration, read from the same environment with the
 * one-process defaults underneath: loopback listeners, the gateway pointed at this
 * process's identity, generated credentials. Anything set in the environment wins,
 * and is validated by the service's own schema. Nothing is written before all of it
 * is valid.
 */
function loadConfigs (env: Record<string, string | undefined>) {
  const layered: Record<string, string | undefined> = {
    IDENTITY_HOST: LOOPBACK,
    GATEWAY_HOST: LOOPBACK,
    GATEWAY_METRICS_HOST: LOOPBACK,
    UPSTREAM_MOCK_HOST: LOOPBACK,
    CONSOLE_HOST: LOOPBACK,
    IDENTITY_TRUST_PROXY: TRUST_THE_IN_PROCESS_GATEWAY,
    // The console is reached through the in-process gateway, over plain http on loopback: no Secure cookie there.
    CONSOLE_TRUST_PROXY: TRUST_THE_IN_PROCESS_GATEWAY,
    CONSOLE_SECURE_COOKIE: 'false',
    // A person is watching: readable lines, which leave the banner's one-time secrets readable above them too.
    LOG_FORMAT: 'pretty',
    ...env
  }
  // The database's folder holds the credentials; identity's schema validates the path itself below.
  const credentialsFile = credentialsFileBeside(databasePathOf(layered))
  const kept = credentialsFor(credentialsFile, env)
  const tokens = {
    IDENTITY_ADMIN_TOKEN: kept.credentials.adminToken,
    IDENTITY_SERVICE_TOKEN: kept.credentials.serviceToken,
    // Signing private keys are encrypted at rest by default: the key is kept with the tokens.
    IDENTITY_SIGNING_KEY_ENCRYPTION_KEY: kept.credentials.signingKeyEncryptionKey
  }
  const { identity, upstreamMock, console } = collectProblems({
    identity: () => loadIdentityConfig({ ...layered, ...tokens }),
    upstreamMock: () => loadUpstreamMockConfig(layered),
    console: () => loadConsoleConfig({ CONSOLE_COOKIE_SECRET: kept.credentials.consoleCookieSecret, ...layered }),
    // Validated here with identity's defaults so that its problems are listed too; built below with identity's real addresses.
    gateway: () => loadGatewayConfig({ ...layered, ...tokens })
  })
  const gateway = loadGatewayConfig({
    IDENTITY_PUBLIC_URL: urlOf(identity.host, identity.port),
    IDENTITY_INTERNAL_URL: urlOf(identity.adminHost, identity.adminPort),
    GATEWAY_CONSOLE_URL: urlOf(console.host, console.port),
    ...layered,
    ...tokens
  })
  const consoleConfig = loadConsoleConfig({
    CONSOLE_IDENTITY_PUBLIC_URL: urlOf(identity.host, identity.port),
    CONSOLE_IDENTITY_ADMIN_URL: urlOf(identity.adminHost, identity.adminPort),
    CONSOLE_COOKIE_SECRET: kept.credentials.consoleCookieSecret,
    ...layered
  })
  const restoreCredentials = kept.keep()
  return { identity, gateway, upstreamMock, console: consoleConfig, credentialsFile, restoreCredentials }
}

/** A configuration problem ends the start with its message and EX_CONFIG, never a stack. */
function exitOnConfigError<T> (step: () => T): T {
  try {
    const result = step()
    return result instanceof Promise ? result.catch(exit) as T : result
  } catch (err) {
    return exit(err)
  }
}

function exit (err: unknown): never {
  if (!(err instanceof ConfigError)) throw err
  process.stderr.write(`${err.message}\n`)
  process.exit(78) // EX_CONFIG
}

/**
 * `npm start`: identity, the gateway, the console and upstream-mock in one process on
 * their fixed ports, with demo accounts created (and printed once) in a fresh database.
 * Without REDIS_URL they share an in-process event bus; with it they use Redis, as
 * separate deployments do.
 */
async function main (): Promise<void> {
  const configs = exitOnConfigError(() => loadConfigs(process.env))
  const { identity: identityConfig, gateway: gatewayConfig, upstreamMock: mockConfig } = configs
  // One process, one stdout: every service's LOG_FORMAT is the same variable.
  useLogFormat(identityConfig.logFormat ?? 'pretty')
  // Both read REDIS_URL / REDIS_CLUSTER_NODES from the one environment.
  const redis = identityConfig.redis
  // One bus for both when there is no Redis: identity's events reach the gateway at once.
  const events = redis === undefined ? createMemoryEventBus() : undefined
  const shared = events !== undefined ? { events } : {}

  const upstreamMock = await buildUpstreamMock({
    users: mockConfig.users, seed: mockConfig.seed, logLevel: mockConfig.logLevel, timeouts: mockConfig.timeouts, bufferedBodiesMaxBytes: mockConfig.bufferedBodiesMaxBytes
  })
  // Building identity may refuse too: stored signing keys the configured secret cannot open.
  const identity = await exitOnConfigError(async () => {
    try {
      return await buildIdentity(identityConfig, shared)
    } catch (err) {
      // A key generated for this start must not stay beside a database it could not open.
      configs.restoreCredentials()
      throw err
    }
  })
  const consolePages = await buildConsole(configs.console)
  const gateway = await buildGatewayServer(gatewayConfig, shared)
  const metrics = gatewayConfig.metrics === null ? null : await buildMetricsServer(gatewayConfig, gateway.portierGateway)

  // The gateway drains first: what it has in flight still needs identity and the upstream.
  closeWithGrace({ delay: gatewayConfig.shutdownGraceMs, skip: ['SIGHUP'] }, async ({ signal, err }) => {
    if (err !== undefined) gateway.log.error({ err }, 'shutting down after an error')
    else gateway.log.info({ signal }, 'shutting down: draining in-flight requests')
    await gateway.close()
    await metrics?.close()
    await identity.close()
    await consolePages.close()
    await upstreamMock.close()
    await events?.close()
  })
  process.on('SIGHUP', () => { gateway.portierGateway.reload() })

  await upstreamMock.listen({ host: mockConfig.host, port: mockConfig.port })
  await identity.publicApp.listen({ host: identityConfig.host, port: identityConfig.port })
  await identity.adminApp.listen({ host: identityConfig.adminHost, port: identityConfig.adminPort })
  await consolePages.listen({ host: configs.console.host, port: configs.console.port })
  if (metrics !== null && gatewayConfig.metrics !== null) await metrics.listen({ host: gatewayConfig.metrics.host, port: gatewayConfig.metrics.port })
  await gateway.listen({ host: gatewayConfig.host, port: gatewayConfig.port })

  const maxDays = identityConfig.apiKeyMaxLifetimeDays
  // The audit trail names the seeding as its actor.
  const accounts = await runAs(systemContext('seed'), () =>
    seedDemoAccounts(identity.services, maxDays > 0 ? Math.min(maxDays, DEMO_KEY_LIFETIME_DAYS) : DEMO_KEY_LIFETIME_DAYS))
  const urls: DemoUrls = {
    gateway: urlOf(gatewayConfig.host, gatewayConfig.port),
    gatewayMetrics: gatewayConfig.metrics === null ? null : urlOf(gatewayConfig.metrics.host, gatewayConfig.metrics.port),
    identity: urlOf(identityConfig.host, identityConfig.port),
    identityAdmin: urlOf(identityConfig.adminHost, identityConfig.adminPort),
    upstreamMock: urlOf(mockConfig.host, mockConfig.port),
    console: `${urlOf(gatewayConfig.host, gatewayConfig.port)}/console`
  }
  const input = { urls, databasePath: identityConfig.databasePath, credentialsFile: configs.credentialsFile, redis: redis?.mode ?? null }
  // Printed, never logged: log lines must not carry secrets, and this text is shown once.
  process.stdout.write(accounts !== null
    ? firstStartBanner(input, accounts)
    : laterStartBanner(input, { users: identity.services.users.list().length, apiKeys: identity.services.apiKeys.list().length }))
}

await main()
