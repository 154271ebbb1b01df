import type Database from 'better-sqlite3'

/**
 * An open connection to identity's database, as every store and migration takes it.
 * Its own module: database.ts opens one and runs the migrations, which take one.
 */
export type Db = Database.Database
