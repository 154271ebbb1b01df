import type { TrafficPolicy } from '../../common/traffic/policy.js'
import type { Db } from './db.js'

export interface RoleRecord {
  name: string
  permissions: string[]
  /** Traffic policies every holder of the role gets, in the order given. */
  policies: TrafficPolicy[]
  /** The longest lifetime a holder may give a key through self-service; null: the configured default. */
  keyMaxLifetimeDays: number | null
  createdAt: number
  updatedAt: number
}

interface RoleRow {
  name: string
  permissions: string
  traffic_policies: string
  key_max_lifetime_days: number | null
  created_at: number
  updated_at: number
}

function toRecord (row: RoleRow | undefined): RoleRecord | null {
  if (row === undefined) return null
  return {
    name: row.name,
    permissions: JSON.parse(row.permissions) as string[],
    policies: JSON.parse(row.traffic_policies) as TrafficPolicy[],
    keyMaxLifetimeDays: row.key_max_lifetime_days,
    createdAt: row.created_at,
    updatedAt: row.updated_at
  }
}

export type RolesStore = ReturnType<typeof createRolesStore>

export function createRolesStore (db: Db) {
  const statements = {
    upsert: db.prepare(`INSERT INTO roles (name, permissions, traffic_policies, key_max_lifetime_days, created_at, updated_at)
      VALUES (@name, @permissions, @policies, @keyMaxLifetimeDays, @now, @now)
      ON CONFLICT(name) DO UPDATE SET permissions = excluded.permissions, traffic_policies = excluded.traffic_policies,
        key_max_lifetime_days = excluded.key_max_lifetime_days, updated_at = excluded.updated_at`),
    get: db.prepare('SELECT * FROM roles WHERE name = ?'),
    list: db.prepare('SELECT * FROM roles ORDER BY name'),
    remove: db.prepare('DELETE FROM roles WHERE name = ?'),
    usersWith: db.prepare('SELECT user_id FROM user_roles WHERE role = ?').pluck(),
    ofUser: db.prepare('SELECT r.* FROM user_roles ur JOIN roles r ON r.name = ur.role WHERE ur.user_id = ? ORDER BY r.name'),
    // For each holder of a role: how many policies their other roles grant; the largest such count.
    mostPoliciesBesides: db.prepare(`SELECT coalesce(max(n), 0) FROM (
        SELECT sum(json_array_length(r.traffic_policies)) AS n
        FROM user_roles ur JOIN roles r ON r.name = ur.role
        WHERE ur.user_id IN (SELECT user_id FROM user_roles WHERE role = @role) AND ur.role <> @role
        GROUP BY ur.user_id)`).pluck()
  }
  return {
    upsert: (name: string, fields: { permissions: string[], policies: TrafficPolicy[], keyMaxLifetimeDays: number | null }, now: number) => {
      statements.upsert.run({
        name, permissions: JSON.stringify(fields.permissions), policies: JSON.stringify(fields.policies), keyMaxLifetimeDays: fields.keyMaxLifetimeDays, now
      })
    },
    get: (name: string) => toRecord(statements.get.get(name) as RoleRow | undefined),
    list: () => (statements.list.all() as RoleRow[]).map((row) => toRecord(row) as RoleRecord),
    remove: (name: string) => statements.remove.run(name).changes > 0,
    usersWith: (name: string) => statements.usersWith.all(name) as string[],
    /** The roles a user holds, by name. */
    ofUser: (userId: string) => (statements.ofUser.all(userId) as RoleRow[]).map((row) => toRecord(row) as RoleRecord),
    /** The most policies any holder of `role` gets from their other roles (0 when nobody holds it). */
    mostPoliciesBesides: (role: string) => statements.mostPoliciesBesides.get({ role }) as number
  }
}
