import t from 'tap'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { loadIdentityConfig } from '../../identity/config.js'
import { tempDir } from '../helpers/temp.js'
import { configProblems } from '../helpers/config-problems.js'
import { nodeCommand } from '../helpers/node-command.js'
import { WITH_SIGNING_KEY_ENCRYPTION } from '../helpers/signing-key-encryption.js'

const TOKENS = { IDENTITY_ADMIN_TOKEN: 'a'.repeat(32), IDENTITY_SERVICE_TOKEN: 's'.repeat(32), ...WITH_SIGNING_KEY_ENCRYPTION }

const problemsOf = (env: Record<string, string>): string[] => configProblems(() => loadIdentityConfig(env))

t.test('happy: defaults apply and the result is frozen', async (t) => {
  const config = loadIdentityConfig(TOKENS)
  t.match(config, {
    port: 3001,
    adminHost: '127.0.0.1',
    adminPort: 3002,
    databasePath: './data/identity.db',
    signingAlg: 'EdDSA',
    refreshIdleSeconds: 14 * 86_400,
    sessionMaxSeconds: 30 * 86_400,
    argon2: { memoryCost: 19_456, timeCost: 2, parallelism: 1 },
    loginThrottle: { enabled: true },
    apiKeyRotationGraceSeconds: 86_400,
    bodyLimitBytes: 1_048_576,
    trustProxy: false
  })
  t.ok(Object.isFrozen(config))
  t.ok(Object.isFrozen(config.argon2))
})

t.test('happy: strings from the environment are coerced to their types', async (t) => {
  const config = loadIdentityConfig({ ...TOKENS, IDENTITY_PORT: '4100', IDENTITY_LOGIN_THROTTLE_ENABLED: 'false', IDENTITY_TRUST_PROXY: '10.0.0.0/8' })
  t.equal(config.port, 4100)
  t.equal(config.loginThrottle.enabled, false)
  t.equal(config.trustProxy, '10.0.0.0/8')
})

t.test('error: there is no default admin or service credential', async (t) => {
  t.same(problemsOf({}).sort(), ['IDENTITY_ADMIN_TOKEN: is required', 'IDENTITY_SERVICE_TOKEN: is required'])
})

t.test('error: every bad field is named, all at once', async (t) => {
  const problems = problemsOf({ ...TOKENS, IDENTITY_ADMIN_TOKEN: 'short', IDENTITY_PORT: 'eighty', IDENTITY_SIGNING_ALG: 'HS256', LOG_LEVEL: 'loud' })
  t.equal(problems.length, 4, 'four problems', { problems })
  t.match(problems.join('\n'), /IDENTITY_ADMIN_TOKEN: must NOT have fewer than 32 characters/)
  t.match(problems.join('\n'), /IDENTITY_PORT: must be integer/)
  t.match(problems.join('\n'), /IDENTITY_SIGNING_ALG/)
  t.match(problems.join('\n'), /LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent/)
})

t.test('security: argon2 parameters below OWASP minimums are refused', async (t) => {
  t.match(problemsOf({ ...TOKENS, IDENTITY_ARGON2_MEMORY_KIB: '4096' }).join(), /IDENTITY_ARGON2_MEMORY_KIB: must be >= 7168/)
  t.match(problemsOf({ ...TOKENS, IDENTITY_ARGON2_MEMORY_KIB: '19456', IDENTITY_ARGON2_TIME_COST: '1' }).join(), /OWASP/)
  t.same(problemsOf({ ...TOKENS, IDENTITY_ARGON2_MEMORY_KIB: '47104', IDENTITY_ARGON2_TIME_COST: '1' }), [])
})

t.test('error: the server refuses to start without credentials, naming them', async (t) => {
  const dir = tempDir(t)
  const result = spawnSync(...nodeCommand(['dist/identity/server.js']), {
    env: { PATH: process.env.PATH ?? '', IDENTITY_DATABASE_PATH: join(dir, 'x.db'), IDENTITY_PORT: '0', IDENTITY_ADMIN_PORT: '0' },
    encoding: 'utf8',
    timeout: 20_000
  })
  t.equal(result.status, 78, 'exit code 78 (EX_CONFIG)', { stderr: result.stderr })
  t.match(result.stderr, /IDENTITY_ADMIN_TOKEN: is required/)
  t.match(result.stderr, /IDENTITY_SERVICE_TOKEN: is required/)
})
