import { Type, type Static } from 'typebox'
import { validateConfig, LOG_FORMAT_PROPERTY, LOG_LEVEL_PROPERTY, parseTrustProxy } from '../common/config.js'
import type { LogFormat } from '../common/log-destination.js'
import { deepFreeze } from '../common/deep-freeze.js'

/**
 * The console's configuration: the one schema, validated once at start. Every field is
 * an environment variable; docs/configuration.md's table is checked against this schema.
 */
export const ConsoleEnvSchema = Type.Object({
  CONSOLE_HOST: Type.String({ default: '127.0.0.1', description: 'Interface the console listens on; the gateway forwards /console to it.' }),
  CONSOLE_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3004, description: 'Port of the console.' }),
  CONSOLE_IDENTITY_PUBLIC_URL: Type.String({ format: 'uri', pattern: '^https?://', default: 'http://127.0.0.1:3001', description: "Identity's public listener: sign-in, refresh, sign-out and /me, called with the signed-in user's token." }),
  CONSOLE_IDENTITY_ADMIN_URL: Type.String({ format: 'uri', pattern: '^https?://', default: 'http://127.0.0.1:3002', description: "Identity's admin listener, for the operator pages (called with the operator's own access token)." }),
  CONSOLE_COOKIE_SECRET: Type.String({ minLength: 32, description: 'Encrypts and authenticates the session cookie (which holds the user\'s tokens). Required; at least 32 characters (openssl rand -hex 32); the same in every console process.' }),
  CONSOLE_SECURE_COOKIE: Type.Boolean({ default: true, description: 'true: the cookie is `__Host-portier-console`, Secure (HTTPS only); false: `portier-console` without Secure, for plain http on loopback only (npm start).' }),
  CONSOLE_TRUST_PROXY: Type.String({ default: 'false', description: 'Whose X-Forwarded-For/-Host/-Proto to believe (the gateways): false, true, or a comma list of IPs/CIDRs. The client IP passed to identity and the origin checked on forms come from them.' }),
  LOG_LEVEL: LOG_LEVEL_PROPERTY,
  LOG_FORMAT: LOG_FORMAT_PROPERTY
}, { additionalProperties: true })

type ConsoleEnv = Static<typeof ConsoleEnvSchema>

export interface ConsoleConfig {
  host: string
  port: number
  identityPublicUrl: string
  identityAdminUrl: string
  cookieSecret: string
  secureCookie: boolean
  trustProxy: boolean | string
  logLevel: string
  /** LOG_FORMAT: how stdout's lines are written (json unless set). */
  logFormat?: LogFormat
}

/** Reads and validates the console's environment, deep-frozen; throws a ConfigError naming every bad variable. */
export function loadConsoleConfig (env: Record<string, string | undefined> = process.env): Readonly<ConsoleConfig> {
  const e = validateConfig<ConsoleEnv>(ConsoleEnvSchema, env, 'console environment')
  return deepFreeze({
    host: e.CONSOLE_HOST,
    port: e.CONSOLE_PORT,
    identityPublicUrl: e.CONSOLE_IDENTITY_PUBLIC_URL.replace(/\/$/, ''),
    identityAdminUrl: e.CONSOLE_IDENTITY_ADMIN_URL.replace(/\/$/, ''),
    cookieSecret: e.CONSOLE_COOKIE_SECRET,
    secureCookie: e.CONSOLE_SECURE_COOKIE,
    trustProxy: parseTrustProxy(e.CONSOLE_TRUST_PROXY),
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT
  })
}
