/**
 * One resource's records in memory: ids 1..seededCount are computed on demand from
 * the seed; records created or changed through the API live in a map for the life of
 * the process and win over the computed ones. Ids are never reused (there is no
 * delete), so the ids in use are always 1..count().
 */
export interface ResourceStore<T extends { id: number }> {
  count: () => number
  get: (id: number) => T | undefined
  /** Records in id order, starting after `offset`. */
  list: (offset: number, limit: number) => T[]
  /** Stores the record `build` makes with the next id. */
  create: (build: (id: number) => T) => T
  /** Replaces an existing record. */
  put: (record: T) => T
}

export function createResourceStore<T extends { id: number }> (seededCount: number, generate: (id: number) => T): ResourceStore<T> {
  const written = new Map<number, T>()
  let count = seededCount
  const get = (id: number): T | undefined => {
    if (!Number.isInteger(id) || id < 1 || id > count) return undefined
    return written.get(id) ?? generate(id)
  }
  return {
    count: () => count,
    get,
    list (offset, limit) {
      const records: T[] = []
      for (let id = offset + 1; id <= Math.min(count, offset + limit); id++) records.push(get(id) as T)
      return records
    },
    create (build) {
      const record = build(count + 1)
      count += 1
      written.set(record.id, record)
      return record
    },
    put (record) {
      if (get(record.id) === undefined) throw new Error(`no record ${record.id} to replace`)
      written.set(record.id, record)
      return record
    }
  }
}
