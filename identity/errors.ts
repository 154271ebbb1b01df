import { AuthProblems, bearerChallenge, defineProblem } from '../common/problem.js'

const invalidTokenChallenge = { 'www-authenticate': bearerChallenge('invalid_token') }

/**
 * Identity's problem table. Codes are stable and never reused; docs/errors.md lists each
 * one and a test keeps the two in step.
 */
export const IdentityProblems = {
  invalidCredentials: defineProblem('invalid_credentials', 401, 'Invalid credentials', 'The e-mail or password is incorrect.'),
  userDisabled: defineProblem('user_disabled', 401, 'User disabled', 'This user account is disabled.'),
  loginThrottled: defineProblem('login_throttled', 429, 'Too many failed logins', 'Too many failed logins; retry after %s seconds.'),
  invalidToken: AuthProblems.invalidToken,
  sessionRevoked: defineProblem('session_revoked', 401, 'Session revoked', 'This session has been revoked.', invalidTokenChallenge),
  sessionExpired: defineProblem('session_expired', 401, 'Session expired', 'This session has reached its maximum lifetime.', invalidTokenChallenge),
  refreshTokenInvalid: defineProblem('refresh_token_invalid', 401, 'Invalid refresh token', 'The refresh token is unknown or belongs to another session.'),
  refreshTokenExpired: defineProblem('refresh_token_expired', 401, 'Refresh token expired', 'The refresh token has expired; log in again.'),
  refreshTokenReused: defineProblem('refresh_token_reused', 401, 'Refresh token reused', 'This refresh token was already used; the session has been revoked.'),
  refreshTokenSuperseded: defineProblem('refresh_token_superseded', 401, 'Refresh token superseded', 'This refresh token was just used by a concurrent request; use the newer token set.'),
  adminUnauthorized: defineProblem('admin_unauthorized', 401, 'Admin credential required', 'Send the admin credential as Authorization: Bearer.'),
  serviceUnauthorized: defineProblem('service_unauthorized', 401, 'Service credential required', 'Send the service credential as Authorization: Bearer.'),
  userNotFound: defineProblem('user_not_found', 404, 'User not found', 'No user has id %s.'),
  emailTaken: defineProblem('email_taken', 409, 'E-mail already registered', 'A user with this e-mail already exists.'),
  unknownRole: defineProblem('unknown_role', 400, 'Unknown role', 'No role named %s exists; create it first.'),
  roleNotFound: defineProblem('role_not_found', 404, 'Role not found', 'No role is named %s.'),
  roleInUse: defineProblem('role_in_use', 409, 'Role in use', 'Role %s is still assigned to users.'),
  keyNotFound: defineProblem('key_not_found', 404, 'API key not found', 'No API key has id %s.'),
  keyNameTaken: defineProblem('key_name_taken', 409, 'API key name taken', 'An API key named %s already exists.'),
  keyRevoked: defineProblem('key_revoked', 409, 'API key revoked', 'API key %s is revoked and cannot change.'),
  keyLifetimeTooLong: defineProblem('key_lifetime_too_long', 400, 'Expiry too far', 'expires_at is beyond the maximum key lifetime of %s days.'),
  expiryInPast: defineProblem('expiry_in_past', 400, 'Expiry in the past', 'expires_at must be in the future.'),
  sessionNotFound: defineProblem('session_not_found', 404, 'Session not found', 'No session has id %s.'),
  adminForbidden: defineProblem('admin_forbidden', 403, 'Operator permission required', 'This operation requires the %s permission.'),
  permissionNotHeld: defineProblem('permission_not_held', 403, 'Permission not held', 'You do not hold %s, so you cannot give it: not to a key, a role or a user.'),
  keyLimitReached: defineProblem('key_limit_reached', 409, 'Key limit reached', 'You hold %s active keys, the most allowed; revoke one first.'),
  keyChangesThrottled: defineProblem('key_changes_throttled', 429, 'Too many key changes', 'Too many key creations or rotations; retry after %s seconds.'),
  sessionIsCurrent: defineProblem('session_is_current', 409, 'Current session', 'This is the session of the presented token; log out to end it.')
} as const

/** Details identity gives with the shared AuthProblems (common/problem.ts has those both services give). */
export const IdentityDetails = {
  bearerMissing: 'Send an access token as Authorization: Bearer.',
  tokenNotOurs: 'The token was not signed by this identity.',
  tokenMalformed: 'The access token is malformed.',
  unknownSession: 'The token names an unknown session.'
} as const
