import { Type, type Static } from 'typebox'
import { ConfigError, validateConfig, LOG_FORMAT_PROPERTY } from '../common/config.js'
import type { LogFormat } from '../common/log-destination.js'
import { deepFreeze } from '../common/deep-freeze.js'
import { listenerEnvProperties, listenerLimitsFromEnv, type ListenerTimeouts } from '../common/listener-limits.js'
import type { UnreadBodyLimits } from '../common/unread-body.js'

/** Smallest and largest data set: 10 keeps every page shape testable, 100 000 is a benchmark. */
export const MIN_USERS = 10
export const MAX_USERS = 100_000
export const DEFAULT_USERS = 100
/** The PRNG seed when none is given: same seed and size, byte-identical bodies. */
export const DEFAULT_SEED = 20_260_101

const LogLevel = Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, { default: 'info', description: 'pino log level.' })
const Users = (description: string) => Type.Integer({ minimum: MIN_USERS, maximum: MAX_USERS, default: DEFAULT_USERS, description })
const Seed = (description: string) => Type.Integer({ minimum: 0, maximum: 0xffff_ffff, default: DEFAULT_SEED, description })

/** The server's environment; `--users N` on the command line overrides UPSTREAM_MOCK_USERS. */
export const UpstreamMockEnvSchema = Type.Object({
  UPSTREAM_MOCK_HOST: Type.String({ default: '127.0.0.1', description: 'Interface to listen on.' }),
  UPSTREAM_MOCK_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 4000, description: 'Port to listen on.' }),
  UPSTREAM_MOCK_USERS: Users('Seeded users (tasks: 2×, meetings: ½×, at least 1).'),
  UPSTREAM_MOCK_SEED: Seed('PRNG seed of the generated data (same seed and size: byte-identical bodies).'),
  ...listenerEnvProperties('UPSTREAM_MOCK', 'the mock'),
  LOG_LEVEL: LogLevel,
  LOG_FORMAT: LOG_FORMAT_PROPERTY
}, { additionalProperties: true })

type UpstreamMockEnv = Static<typeof UpstreamMockEnvSchema>

/** What `buildUpstreamMock` accepts, checked the same way as the environment. */
export const UpstreamMockOptionsSchema = Type.Object({
  users: Users('Seeded users.'),
  seed: Seed('PRNG seed.'),
  logLevel: LogLevel
}, { additionalProperties: true })

export type ValidUpstreamMockOptions = Static<typeof UpstreamMockOptionsSchema>

export interface UpstreamMockConfig {
  host: string
  port: number
  users: number
  seed: number
  timeouts: ListenerTimeouts
  bufferedBodiesMaxBytes: number
  unreadBodies: UnreadBodyLimits
  logLevel: string
  /** LOG_FORMAT: how stdout's lines are written (json unless set). */
  logFormat?: LogFormat
}

/** Reads and validates the server's environment, deep-frozen; throws a ConfigError naming every bad variable. */
export function loadUpstreamMockConfig (env: Record<string, string | undefined> = process.env,
  overrides: { users?: number } = {}): Readonly<UpstreamMockConfig> {
  const e = validateConfig<UpstreamMockEnv>(UpstreamMockEnvSchema, env, 'upstream-mock environment')
  const listeners = listenerLimitsFromEnv('UPSTREAM_MOCK', e)
  if (listeners.problems.length > 0) throw new ConfigError('upstream-mock environment', listeners.problems)
  return deepFreeze({
    host: e.UPSTREAM_MOCK_HOST,
    port: e.UPSTREAM_MOCK_PORT,
    users: overrides.users ?? e.UPSTREAM_MOCK_USERS,
    seed: e.UPSTREAM_MOCK_SEED,
    timeouts: listeners.timeouts,
    bufferedBodiesMaxBytes: listeners.bufferedBodiesMaxBytes,
    unreadBodies: listeners.unreadBodies,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT
  })
}
