import { randomBytes } from 'node:crypto'
import type { IdentityServices } from '../identity/services/index.js'
import { EVERY_OPERATOR_PERMISSION } from '../common/operator-permissions.js'

/** What the first start creates and prints once: nothing of it is stored in clear. */
export interface DemoAccounts {
  admin: { email: string, password: string }
  user: { email: string, password: string }
  apiKey: { name: string, key: string, permissions: string[], expiresAt: number }
}

export const DEMO_ADMIN_EMAIL = 'admin@example.com'
export const DEMO_USER_EMAIL = 'user@example.com'
/** The demo key may list users, nothing else: enough to show a key working and a 403. */
export const DEMO_KEY_PERMISSIONS = ['users:list']
/** The demo admin's second role: every operator permission, so their access token opens the admin API too. */
export const DEMO_OPERATOR_ROLE = 'operator'
/** Keys should expire, so a leaked one stops working; a demo key lives long enough to be forgotten about, not forever. */
export const DEMO_KEY_LIFETIME_DAYS = 90

/** 128 random bits, URL-safe, so the printed curl lines need no shell escaping. */
function newPassword (): string {
  return randomBytes(16).toString('base64url')
}

/**
 * Creates the demo accounts in a fresh database: an `admin` role with every permission
 * (`*`: every upstream's) and an `operator` role with every operator permission
 * (`admin:*`, which `*` never grants), both held by the admin user; a `staff` role that may work with tasks and meetings but not list
 * users (the printed 403), and an API key with `users:list`. A database that already
 * holds users or keys is left alone (returns null): a second start reuses the data and
 * prints no new secret.
 */
export async function seedDemoAccounts (services: IdentityServices, keyLifetimeDays = DEMO_KEY_LIFETIME_DAYS): Promise<DemoAccounts | null> {
  if (services.users.list().length > 0 || services.apiKeys.list().length > 0) return null
  await services.roles.set('admin', ['*'])
  await services.roles.set(DEMO_OPERATOR_ROLE, [EVERY_OPERATOR_PERMISSION])
  await services.roles.set('staff', ['tasks:*', 'meetings:*'])
  const admin = { email: DEMO_ADMIN_EMAIL, password: newPassword() }
  const user = { email: DEMO_USER_EMAIL, password: newPassword() }
  await services.users.create({ ...admin, roles: ['admin', DEMO_OPERATOR_ROLE] })
  await services.users.create({ ...user, roles: ['staff'] })
  const expiresAt = services.clock.now() + keyLifetimeDays * 86_400_000
  const created = await services.apiKeys.create({ name: 'demo-key', permissions: DEMO_KEY_PERMISSIONS, expiresAt, origin: 'seed' })
  return { admin, user, apiKey: { name: created.key.name, key: created.secret, permissions: DEMO_KEY_PERMISSIONS, expiresAt } }
}
