import type { EventBus } from '../../common/event-bus.js'
import { ACCESS_TOKEN_TTL_SECONDS, type IdentityCoreConfig } from '../config.js'
import type { Db } from '../store/database.js'
import { createApiKeysStore } from '../store/api-keys-store.js'
import { createRolesStore } from '../store/roles-store.js'
import { createSessionsStore } from '../store/sessions-store.js'
import { createSigningKeysStore } from '../store/signing-keys-store.js'
import { createUsersStore } from '../store/users-store.js'
import { createAccessTokens, type AccessTokens } from './access-tokens.js'
import { createApiKeys, type ApiKeys } from './api-keys.js'
import type { Clock } from './clock.js'
import { createLogin, type Login } from './login.js'
import { createLoginThrottle } from './login-throttle.js'
import { createPasswordHasher } from './password-hasher.js'
import { createRoles, type Roles } from './roles.js'
import { createSessions, type Sessions } from './sessions.js'
import { createSigningKeys, type SigningKeys } from './signing-keys.js'
import { createUsers, type Users } from './users.js'

/** Everything identity does, wired once; shared by the HTTP apps and the CLI. */
export interface IdentityServices {
  clock: Clock
  login: Login
  sessions: Sessions
  users: Users
  roles: Roles
  apiKeys: ApiKeys
  signingKeys: SigningKeys
  accessTokens: AccessTokens
  /** The union of a user's role permissions. */
  permissionsOf: (userId: string) => string[]
}

export async function createIdentityServices (config: IdentityCoreConfig, deps: { db: Db, events: EventBus, clock: Clock }): Promise<IdentityServices> {
  const { db, events, clock } = deps
  const usersStore = createUsersStore(db)
  const rolesStore = createRolesStore(db)
  const hasher = await createPasswordHasher(config.argon2)
  const signingKeys = createSigningKeys({
    store: createSigningKeysStore(db), clock, events, alg: config.signingAlg, accessTokenTtlSeconds: ACCESS_TOKEN_TTL_SECONDS
  })
  await signingKeys.ensureActive()
  const accessTokens = createAccessTokens({
    signingKeys, clock, issuer: config.issuer, audience: config.audience, ttlSeconds: ACCESS_TOKEN_TTL_SECONDS
  })
  const sessions = createSessions({
    db,
    store: createSessionsStore(db),
    users: usersStore,
    accessTokens,
    events,
    clock,
    accessTokenTtlSeconds: ACCESS_TOKEN_TTL_SECONDS,
    refreshIdleSeconds: config.refreshIdleSeconds,
    sessionMaxSeconds: config.sessionMaxSeconds,
    refreshReuseGraceSeconds: config.refreshReuseGraceSeconds
  })
  const users = createUsers({ db, store: usersStore, roles: rolesStore, hasher, sessions, events, clock })
  const throttle = createLoginThrottle({ ...config.loginThrottle, clock })
  return {
    clock,
    login: createLogin({ users: usersStore, userAccounts: users, hasher, sessions, throttle }),
    sessions,
    users,
    roles: createRoles({ store: rolesStore, events, clock }),
    apiKeys: createApiKeys({
      db,
      store: createApiKeysStore(db),
      hasher,
      events,
      clock,
      maxLifetimeDays: config.apiKeyMaxLifetimeDays,
      defaultRotationGraceSeconds: config.apiKeyRotationGraceSeconds
    }),
    signingKeys,
    accessTokens,
    permissionsOf: (userId) => usersStore.permissionsOf(userId)
  }
}
