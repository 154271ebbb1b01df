import type { Db } from './db.js'

export interface UserRecord {
  id: string
  email: string
  passwordHash: string
  createdAt: number
  updatedAt: number
  passwordChangedAt: number
  disabledAt: number | null
  roles: string[]
}

interface UserRow {
  id: string
  email: string
  password_hash: string
  created_at: number
  updated_at: number
  password_changed_at: number
  disabled_at: number | null
  roles: string | null
}

const SELECT_USER = `
  SELECT u.*, (SELECT json_group_array(role) FROM (SELECT role FROM user_roles WHERE user_id = u.id ORDER BY role)) AS roles
  FROM users u`

function toRecord (row: UserRow | undefined): UserRecord | null {
  if (row === undefined) return null
  return {
    id: row.id,
    email: row.email,
    passwordHash: row.password_hash,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    passwordChangedAt: row.password_changed_at,
    disabledAt: row.disabled_at,
    roles: JSON.parse(row.roles ?? '[]') as string[]
  }
}

/** E-mails are matched case-insensitively after Unicode normalisation. */
export function normalizeEmail (email: string): string {
  return email.normalize('NFC').trim().toLowerCase()
}

export type UsersStore = ReturnType<typeof createUsersStore>

export function createUsersStore (db: Db) {
  const statements = {
    insert: db.prepare(`INSERT INTO users (id, email, email_normalized, password_hash, created_at, updated_at, password_changed_at)
      VALUES (@id, @email, @emailNormalized, @passwordHash, @now, @now, @now)`),
    byId: db.prepare(`${SELECT_USER} WHERE u.id = ?`),
    byEmail: db.prepare(`${SELECT_USER} WHERE u.email_normalized = ?`),
    list: db.prepare(`${SELECT_USER} ORDER BY u.created_at, u.id`),
    clearRoles: db.prepare('DELETE FROM user_roles WHERE user_id = ?'),
    addRole: db.prepare('INSERT INTO user_roles (user_id, role) VALUES (?, ?)'),
    setPassword: db.prepare('UPDATE users SET password_hash = ?, password_changed_at = ?, updated_at = ? WHERE id = ?'),
    setDisabled: db.prepare('UPDATE users SET disabled_at = ?, updated_at = ? WHERE id = ?'),
    touch: db.prepare('UPDATE users SET updated_at = ? WHERE id = ?'),
    permissions: db.prepare(`SELECT DISTINCT p.value FROM user_roles ur JOIN roles r ON r.name = ur.role, json_each(r.permissions) p
      WHERE ur.user_id = ? ORDER BY p.value`).pluck()
  }

  return {
    insert (user: { id: string, email: string, passwordHash: string, roles: string[] }, now: number): void {
      statements.insert.run({ ...user, emailNormalized: normalizeEmail(user.email), now })
      for (const role of user.roles) statements.addRole.run(user.id, role)
    },
    byId: (id: string) => toRecord(statements.byId.get(id) as UserRow | undefined),
    byEmail: (email: string) => toRecord(statements.byEmail.get(normalizeEmail(email)) as UserRow | undefined),
    list: () => (statements.list.all() as UserRow[]).map((row) => toRecord(row) as UserRecord),
    setRoles (id: string, roles: string[], now: number): void {
      statements.clearRoles.run(id)
      for (const role of roles) statements.addRole.run(id, role)
      statements.touch.run(now, id)
    },
    setPassword: (id: string, passwordHash: string, now: number) => { statements.setPassword.run(passwordHash, now, now, id) },
    setDisabled: (id: string, disabledAt: number | null, now: number) => { statements.setDisabled.run(disabledAt, now, id) },
    /** The union of the permissions of the user's roles. */
    permissionsOf: (id: string) => statements.permissions.all(id) as string[]
  }
}
