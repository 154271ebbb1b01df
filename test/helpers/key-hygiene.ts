import type { Test } from 'tap'
import { assertStatus } from './assert.js'
import { adminClient } from './http.js'
import { fakeClock, startIdentity } from './identity.js'
import { keyHelpers, type AdminSetup } from './session-setup.js'

export const DAY_MS = 86_400_000

/** The keys of the fleet, by name: each one answers some hygiene query and not others. */
export type FleetKey = 'A1' | 'A2' | 'A3' | 'B1' | 'B2' | 'N1' | 'N2' | 'N3' | 'N4' | 'N5'

export interface KeyFleet {
  s: AdminSetup
  owners: { a: string, b: string }
  /** Key id → its name in the fleet. */
  nameOf: (id: string) => FleetKey
}

/**
 * Ten keys made over 35 days that end now, so that the server's fake clock and the CLI's
 * real one agree to within the test's run (every boundary is days away). On day 0
 * (owner A: A…, owner B: B…, none: N…):
 * - A1 never expires; A2 expires on day 40; A3 on day 300, last used on day 1;
 * - B1 expires on day 10 (expired now); B2 on day 100, disabled;
 * - N1 expires on day 100, revoked; N2 never expires, rotated on day 30 with 10 days of grace
 *   (rotating now); N3 expires on day 200, last used on day 34; N4 expires on day 200,
 *   rotated on day 30 without grace (not rotating);
 * and on day 20: N5, never expiring, never used.
 */
export async function keyFleet (t: Test): Promise<KeyFleet> {
  const clock = fakeClock(Date.now() - 35 * DAY_MS)
  const identity = await startIdentity(t, {}, { clock })
  const s: AdminSetup = { ...identity, clock, admin: adminClient(identity.adminUrl, identity.adminToken) }
  const keys = keyHelpers(t, s)
  const day0 = clock.now()
  const at = (day: number): string => new Date(day0 + day * DAY_MS).toISOString()
  const owner = async (email: string): Promise<string> => {
    const created = await s.admin('POST', '/admin/users', { email, password: 'a long enough password', roles: [] })
    assertStatus(t, created, 201, `owner ${email}`)
    return created.body.user.id as string
  }
  const owners = { a: await owner('owner-a@example.com'), b: await owner('owner-b@example.com') }
  const names = new Map<string, FleetKey>()
  const make = async (name: FleetKey, expiresOnDay: number | null, ownerUserId: string | null = null) => {
    const created = await keys.create({ name, permissions: ['users:list'], expires_at: expiresOnDay === null ? null : at(expiresOnDay), owner_user_id: ownerUserId })
    names.set(created.id, name)
    return created
  }
  await make('A1', null, owners.a)
  await make('A2', 40, owners.a)
  const a3 = await make('A3', 300, owners.a)
  await make('B1', 10, owners.b)
  const b2 = await make('B2', 100, owners.b)
  const n1 = await make('N1', 100)
  const n2 = await make('N2', null)
  const n3 = await make('N3', 200)
  const n4 = await make('N4', 200)
  assertStatus(t, await s.admin('POST', `/admin/keys/${b2.id}/disable`), 200, 'B2 disabled')
  assertStatus(t, await s.admin('POST', `/admin/keys/${n1.id}/revoke`), 200, 'N1 revoked')

  clock.advance(DAY_MS)
  await keys.reportUses([{ key: a3.key, at: clock.now() }])
  clock.advance(19 * DAY_MS)
  await make('N5', null)
  clock.advance(10 * DAY_MS)
  assertStatus(t, await s.admin('POST', `/admin/keys/${n2.id}/rotate`, { grace_seconds: 10 * 86_400 }), 200, 'N2 rotated with 10 days of grace')
  assertStatus(t, await s.admin('POST', `/admin/keys/${n4.id}/rotate`, { grace_seconds: 0 }), 200, 'N4 rotated without grace')
  clock.advance(4 * DAY_MS)
  await keys.reportUses([{ key: n3.key, at: clock.now() }])
  clock.advance(Date.now() - clock.now())
  return { s, owners, nameOf: (id) => names.get(id) as FleetKey }
}

/** What each hygiene query answers on the fleet, as the admin API's query and the names expected (sorted). */
export function fleetQueries (owners: KeyFleet['owners']): Array<{ query: Record<string, string | number | boolean>, expected: FleetKey[] }> {
  return [
    { query: {}, expected: ['A1', 'A2', 'A3', 'B1', 'B2', 'N1', 'N2', 'N3', 'N4', 'N5'] },
    { query: { owner: owners.a }, expected: ['A1', 'A2', 'A3'] },
    { query: { owner: owners.b }, expected: ['B1', 'B2'] },
    { query: { owner: 'usr_nobody' }, expected: [] },
    { query: { status: 'active' }, expected: ['A1', 'A2', 'A3', 'N2', 'N3', 'N4', 'N5'] },
    { query: { status: 'disabled' }, expected: ['B2'] },
    { query: { status: 'revoked' }, expected: ['N1'] },
    { query: { status: 'expired' }, expected: ['B1'] },
    { query: { status: 'rotating' }, expected: ['N2'] },
    { query: { expiring_within_days: 7 }, expected: ['A2'] },
    { query: { expiring_within_days: 70 }, expected: ['A2', 'B2', 'N1'] },
    { query: { idle_days: 30 }, expected: ['A1', 'A2', 'A3', 'B1', 'B2', 'N1', 'N2', 'N4'] },
    { query: { idle_days: 10 }, expected: ['A1', 'A2', 'A3', 'B1', 'B2', 'N1', 'N2', 'N4', 'N5'] },
    { query: { idle_days: 36 }, expected: [] },
    { query: { never_expires: true }, expected: ['A1', 'N2', 'N5'] },
    { query: { never_expires: false }, expected: ['A2', 'A3', 'B1', 'B2', 'N1', 'N3', 'N4'] },
    { query: { owner: owners.a, status: 'active', expiring_within_days: 7 }, expected: ['A2'] },
    { query: { status: 'active', never_expires: true }, expected: ['A1', 'N2', 'N5'] },
    { query: { owner: owners.b, idle_days: 30 }, expected: ['B1', 'B2'] },
    { query: { status: 'rotating', never_expires: true }, expected: ['N2'] },
    { query: { owner: owners.a, status: 'revoked' }, expected: [] },
    { query: { status: 'active', idle_days: 30, never_expires: false }, expected: ['A2', 'A3', 'N4'] }
  ]
}

/** A fleet query as GET /admin/keys's query string. */
export function queryString (query: Record<string, string | number | boolean>): string {
  return new URLSearchParams(Object.fromEntries(Object.entries(query).map(([name, value]) => [name, String(value)]))).toString()
}
