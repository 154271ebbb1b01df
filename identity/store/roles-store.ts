import type { Db } from './db.js'

export interface RoleRecord {
  name: string
  permissions: string[]
  createdAt: number
  updatedAt: number
}

interface RoleRow { name: string, permissions: string, created_at: number, updated_at: number }

function toRecord (row: RoleRow | undefined): RoleRecord | null {
  if (row === undefined) return null
  return { name: row.name, permissions: JSON.parse(row.permissions) as string[], createdAt: row.created_at, updatedAt: row.updated_at }
}

export type RolesStore = ReturnType<typeof createRolesStore>

export function createRolesStore (db: Db) {
  const statements = {
    upsert: db.prepare(`INSERT INTO roles (name, permissions, created_at, updated_at) VALUES (?, ?, ?, ?)
      ON CONFLICT(name) DO UPDATE SET permissions = excluded.permissions, updated_at = excluded.updated_at`),
    get: db.prepare('SELECT * FROM roles WHERE name = ?'),
    list: db.prepare('SELECT * FROM roles ORDER BY name'),
    remove: db.prepare('DELETE FROM roles WHERE name = ?'),
    usersWith: db.prepare('SELECT user_id FROM user_roles WHERE role = ?').pluck()
  }
  return {
    upsert: (name: string, permissions: string[], now: number) => { statements.upsert.run(name, JSON.stringify(permissions), now, now) },
    get: (name: string) => toRecord(statements.get.get(name) as RoleRow | undefined),
    list: () => (statements.list.all() as RoleRow[]).map((row) => toRecord(row) as RoleRecord),
    remove: (name: string) => statements.remove.run(name).changes > 0,
    usersWith: (name: string) => statements.usersWith.all(name) as string[]
  }
}
