import type { ApiKeyRecord } from '../store/api-keys-store.js'
import type { RoleRecord } from '../store/roles-store.js'
import { normalizeEmail, type UserRecord, type UsersStore } from '../store/users-store.js'
import { apiKeyView, roleView } from '../views.js'
import { isPortierProblem } from '../../common/problem.js'
import { IdentityProblems } from '../errors.js'
import type { ApiKeys } from './api-keys.js'
import type { Audit, AuditTarget } from './audit.js'
import { audited } from './audited.js'
import type { Clock } from './clock.js'
import type { Login, LoginAttempt } from './login.js'
import type { Roles } from './roles.js'
import type { Sessions } from './sessions.js'
import type { SigningKeys } from './signing-keys.js'
import type { Users } from './users.js'

/**
 * The services as the apps and the CLI use them: each change records itself in the
 * audit trail. The services inside call each other unwrapped (a password change ends
 * sessions without a second record), and a new method is not recorded until it gets a
 * recipe here: the audit coverage test fails for any route or command whose call
 * writes no record.
 *
 * What changes hold: the state an operator sees in the API's views, less timestamps,
 * and never a password, a key or refresh-token text, or a hash of one. A key's prefix
 * (`ptk_<lookup id>`) is kept: it is shown in every listing, is not enough to use the
 * key, and is what a leaked key is traced by.
 */

const userTarget = (id: string | null, name: string | null = null): AuditTarget => ({ type: 'user', id, name })
const userState = (user: UserRecord) => ({ email: user.email, roles: user.roles, status: user.disabledAt === null ? 'active' : 'disabled' })

function roleState (role: RoleRecord) {
  const { created_at: _created, updated_at: _updated, name: _name, ...state } = roleView(role)
  return state
}

export function auditedUsers (users: Users, audit: Audit): Users {
  const state = ([id]: [string, ...unknown[]]) => userState(users.get(id))
  const byId = ([id]: [string, ...unknown[]], result: UserRecord | null) => userTarget(id, result?.email ?? null)
  return {
    ...users,
    create: audited(audit, {
      action: 'user.create',
      target: ([input], result) => userTarget(result?.id ?? null, input.email),
      after: userState
    }, users.create),
    setRoles: audited(audit, { action: 'user.roles_set', target: byId, before: state, after: userState }, users.setRoles),
    // Nothing of the password: only that it changed (which ends the user's sessions).
    changePassword: audited(audit, {
      action: 'user.password_reset',
      target: byId,
      after: (user) => ({ password_changed_at: new Date(user.passwordChangedAt).toISOString(), sessions_ended: true })
    }, users.changePassword),
    setDisabled: audited(audit, {
      action: ([, disabled]) => (disabled ? 'user.disable' : 'user.enable'),
      target: byId,
      before: state,
      after: userState
    }, users.setDisabled)
  }
}

export function auditedRoles (roles: Roles, audit: Audit): Roles {
  const before = ([name]: [string, ...unknown[]]) => roleState(roles.get(name))
  const target = ([name]: [string, ...unknown[]]): AuditTarget => ({ type: 'role', id: name, name })
  return {
    ...roles,
    set: audited(audit, { action: (_args, existing) => (existing === null ? 'role.create' : 'role.update'), target, before, after: roleState }, roles.set),
    remove: audited(audit, { action: 'role.remove', target, before }, roles.remove)
  }
}

export function auditedApiKeys (apiKeys: ApiKeys, audit: Audit, clock: Clock): ApiKeys {
  function keyState (key: ApiKeyRecord) {
    const view = apiKeyView(key, apiKeys.secretsOf(key.id), clock.now())
    return {
      name: view.name,
      key_prefix: view.key_prefix,
      origin: key.origin,
      owner_user_id: view.owner_user_id,
      permissions: view.permissions,
      policies: view.policies,
      expires_at: view.expires_at,
      status: view.status
    }
  }
  const before = ([id]: [string, ...unknown[]]) => keyState(apiKeys.get(id))
  const keyTarget = (id: string | null, key: ApiKeyRecord | null, name: string | null = null): AuditTarget =>
    ({ type: 'api_key', id, name: key?.name ?? name })
  const byId = ([id]: [string, ...unknown[]], result: { key: ApiKeyRecord } | ApiKeyRecord | null) =>
    keyTarget(id, result === null ? null : 'key' in result ? result.key : result)
  return {
    ...apiKeys,
    create: audited(audit, {
      action: 'key.create',
      target: ([input], result) => keyTarget(result?.key.id ?? null, result?.key ?? null, input.name),
      after: (result) => keyState(result.key)
    }, apiKeys.create),
    update: audited(audit, { action: 'key.update', target: byId, before, after: (result) => keyState(result.key) }, apiKeys.update),
    setDisabled: audited(audit, {
      action: ([, disabled]) => (disabled ? 'key.disable' : 'key.enable'),
      target: byId,
      before,
      after: keyState
    }, apiKeys.setDisabled),
    revoke: audited(audit, { action: 'key.revoke', target: byId, before, after: keyState }, apiKeys.revoke),
    rotate: audited(audit, {
      action: 'key.rotate',
      target: byId,
      before,
      after: (result, [, graceSeconds]) => ({ ...keyState(result.key), grace_seconds: graceSeconds ?? null })
    }, apiKeys.rotate)
  }
}

export function auditedSessions (sessions: Sessions, audit: Audit): Sessions {
  // `revoke` reads the session through `this`: the wrapper calls it on the service itself.
  const revoke: Sessions['revoke'] = (id, reason) => sessions.revoke(id, reason)
  return {
    ...sessions,
    revoke: audited(audit, {
      action: 'session.revoke',
      target: ([id], result) => ({ type: 'session', id, name: result?.userId ?? null }),
      after: (session, [, reason]) => ({ user_id: session.userId, reason })
    }, revoke),
    revokeAllOfUser: audited(audit, {
      action: 'session.revoke_all',
      target: ([userId]) => userTarget(userId),
      after: (ids, [, reason]) => ({ reason, revoked: ids })
    }, sessions.revokeAllOfUser)
  }
}

export function auditedSigningKeys (signingKeys: SigningKeys, audit: Audit): SigningKeys {
  const activeKid = () => signingKeys.list().find((key) => key.retiredAt === null)?.kid ?? null
  return {
    ...signingKeys,
    rotate: audited(audit, {
      action: 'signing_key.rotate',
      target: (_args, result) => ({ type: 'signing_key', id: result?.kid ?? null, name: null }),
      before: () => ({ kid: activeKid() }),
      after: (key) => ({ kid: key.kid, alg: key.alg })
    }, signingKeys.rotate),
    /** Records `signing_key.create` when it made the first key (not when one existed). */
    async ensureActive () {
      const existing = activeKid()
      const key = await signingKeys.ensureActive()
      if (existing !== key.kid) audit.record({ action: 'signing_key.create', target: { type: 'signing_key', id: key.kid, name: null }, changes: { after: { kid: key.kid, alg: key.alg } } })
      return key
    }
  }
}

/** A shape that is plainly an e-mail address (no spaces, one @, a dot after it): not a password typed in the wrong box. */
const EMAIL_SHAPE = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]+$/

/**
 * Every login, successful or refused for its credentials or a disabled account: the
 * user is the actor and target when the e-mail names one. For an e-mail that names
 * nobody, the record keeps the e-mail (normalized) only when it has an e-mail's shape,
 * else nothing: a password typed into the e-mail box must not land in the trail. The
 * password never does. Throttled attempts are not recorded (no credential was checked;
 * the metrics count them): a flood of them would otherwise write to the trail at
 * network speed.
 */
export function auditedLogin (login: Login, users: Pick<UsersStore, 'byEmail'>, audit: Audit): Login {
  return async (attempt: LoginAttempt) => {
    const email = normalizeEmail(attempt.email)
    const user = users.byEmail(email)
    const actor = user === null ? { type: 'anonymous' as const, id: null } : { type: 'user' as const, id: user.id }
    const target = user === null ? userTarget(null, EMAIL_SHAPE.test(email) ? email : null) : userTarget(user.id, user.email)
    try {
      const tokens = await login(attempt)
      audit.record({ action: 'login', actor, target })
      return tokens
    } catch (err) {
      if (isPortierProblem(err) && err.code !== IdentityProblems.loginThrottled.code) {
        audit.record({ action: 'login', outcome: 'failure', errorCode: err.code, actor, target })
      }
      throw err
    }
  }
}
