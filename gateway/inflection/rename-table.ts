/**
 * Renames object member names given as raw bytes, remembering each answer under the
 * bytes it was asked for, so that the rewriter (json-key-rewriter.ts) renames a key it
 * has met before without making a string: a hash of the bytes (computed by the caller
 * while it scans them), one probe, one byte comparison.
 *
 * Only keys of ASCII letters, digits, `_` and `-` reach the table (the rewriter passes
 * every other key as written), so a key's bytes are its Latin-1 string.
 *
 * Bounded: once `maxEntries` keys are remembered it keeps them and renames new keys
 * without remembering them. A list of records repeats a few dozen names, which are in
 * the table after the first record; a body of thousands of distinct names can neither
 * evict them nor make the table grow.
 *
 * Every remembered name and its new name are copied into one buffer (`names`), so the
 * table holds no reference to a caller's bytes, and the rewriter reads every name from
 * one array. The table also remembers which entry followed each entry last time
 * (`following`): records repeat their keys in order, so the rewriter guesses the next
 * key and confirms the guess by comparing bytes, without hashing.
 */

/** Keys a table remembers by default, per direction, upstream and style. */
export const DEFAULT_RENAME_TABLE_ENTRIES = 10_000

/** FNV-1a over bytes: the seed and the step the rewriter uses while it scans a key. */
export const KEY_HASH_SEED = 0x811c9dc5 | 0
export function hashStep (hash: number, byte: number): number {
  return Math.imul(hash ^ byte, 0x01000193)
}

/** What a rename answers for a key that keeps its name. */
export const SAME_NAME = null

export type Rename = (key: string) => string

/** Entry numbers with a meaning of their own in `following`: before a body's first key, after a key the table does not hold. */
export const BODY_START = 0
export const UNKNOWN_KEY = 1
const FIRST_ENTRY = 2
/** Ints per entry in `entries`: where the name starts in `names`, its length, where the new name starts, its length (-1: SAME_NAME). */
export const ENTRY_INTS = 4
const FIRST_ENTRY_CAPACITY = 64

export class RenameTable {
  private readonly slots: Int32Array
  private readonly slotHashes: Int32Array
  private readonly mask: number
  private readonly targets: Array<Buffer | null> = []
  /** Per entry, from FIRST_ENTRY: the new name as its bytes read (the key itself when it keeps its name). */
  private readonly renamedNames: string[] = []
  private readonly maxEntries: number
  private readonly rename: Rename
  private readonly onRemember: ((source: string, target: string) => void) | undefined

  // For the rewriter, not the table's API: read again after every call that may remember a key (they grow).
  /** The bytes of every remembered name and new name. */
  names: Buffer = Buffer.alloc(1024)
  /** `names`, read four bytes at a time. */
  namesView: DataView = viewOf(this.names)
  private namesUsed = 0
  /** ENTRY_INTS per entry number. */
  entries: Int32Array = new Int32Array(FIRST_ENTRY_CAPACITY * ENTRY_INTS)
  /** Per entry number: the entry that followed it last time (0 if none); a guess, to be confirmed. */
  following: Int32Array = new Int32Array(FIRST_ENTRY_CAPACITY)
  /** The new name (or SAME_NAME) of the last key entryFor could not remember. */
  unremembered: Buffer | null = SAME_NAME
  /** Entry numbers below this one are in use. */
  entryEnd = FIRST_ENTRY

  /**
   * `rename` gives a key's new name (the key itself when it keeps its name);
   * `onRemember` hears every pair the table keeps, in the order it keeps them.
   */
  constructor (rename: Rename, options: { maxEntries?: number, onRemember?: (source: string, target: string) => void } = {}) {
    const maxEntries = options.maxEntries ?? DEFAULT_RENAME_TABLE_ENTRIES
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new RangeError(`maxEntries must be a positive integer, got ${String(maxEntries)}`)
    let capacity = 16
    while (capacity < maxEntries * 2) capacity *= 2
    this.slots = new Int32Array(capacity)
    this.slotHashes = new Int32Array(capacity)
    this.mask = capacity - 1
    this.maxEntries = maxEntries
    this.rename = rename
    this.onRemember = options.onRemember
  }

  /** Keys remembered; never above maxEntries. */
  get size (): number { return this.entryEnd - FIRST_ENTRY }

  /** Forgets every key, for a rename whose answers have changed. */
  clear (): void {
    this.slots.fill(0)
    this.following.fill(0)
    this.targets.length = 0
    this.renamedNames.length = 0
    this.namesUsed = 0
    this.entryEnd = FIRST_ENTRY
  }

  /**
   * The new name of the key in `bytes[start, end)` (whose hash is `hash`), or SAME_NAME
   * when it keeps its name.
   */
  lookup (bytes: Uint8Array, start: number, end: number, hash: number): Uint8Array | null {
    const entry = this.entryFor(bytes, start, end, hash)
    return entry === 0 ? this.unremembered : this.targets[entry - FIRST_ENTRY] as Buffer | null
  }

  /**
   * The entry number of the key in `bytes[start, end)`, remembering it if it is new; 0
   * when the table is full and does not hold it (its new name is then in `unremembered`).
   */
  entryFor (bytes: Uint8Array, start: number, end: number, hash: number): number {
    const { slots, slotHashes, mask, entries } = this
    const names = this.names
    const length = end - start
    let slot = hash & mask
    for (;;) {
      const entry = slots[slot] as number
      if (entry === 0) break
      if (slotHashes[slot] === hash && entries[entry * ENTRY_INTS + 1] === length) {
        const known = entries[entry * ENTRY_INTS] as number
        let i = 0
        while (i < length && names[known + i] === bytes[start + i]) i++
        if (i === length) return entry
      }
      slot = (slot + 1) & mask
    }
    const key = Buffer.from(bytes.buffer, bytes.byteOffset + start, length).toString('latin1')
    const renamed = this.rename(key)
    const target = renamed === key ? SAME_NAME : Buffer.from(renamed, 'latin1')
    if (this.size >= this.maxEntries) {
      this.unremembered = target
      return 0
    }
    const entry = this.entryEnd++
    if (entry >= this.following.length) this.growEntries()
    const at = entry * ENTRY_INTS
    const sourceStart = this.reserveNames(length + (target === null ? 0 : target.length))
    this.names.set(bytes.subarray(start, end), sourceStart)
    this.entries[at] = sourceStart
    this.entries[at + 1] = length
    if (target === null) {
      this.entries[at + 2] = 0
      this.entries[at + 3] = -1
    } else {
      this.names.set(target, sourceStart + length)
      this.entries[at + 2] = sourceStart + length
      this.entries[at + 3] = target.length
    }
    this.targets.push(target)
    this.renamedNames.push(target === null ? key : target.toString('latin1'))
    slots[slot] = entry
    slotHashes[slot] = hash
    this.onRemember?.(key, renamed)
    return entry
  }

  /** The new name of an entry's key, as a string: for a rewriter that compares names. */
  renamedName (entry: number): string {
    return this.renamedNames[entry - FIRST_ENTRY] as string
  }

  private growEntries (): void {
    const entries = new Int32Array(this.entries.length * 2)
    entries.set(this.entries)
    this.entries = entries
    const following = new Int32Array(this.following.length * 2)
    following.set(this.following)
    this.following = following
  }

  /** Room for `length` more bytes in `names`; returns where it starts. */
  private reserveNames (length: number): number {
    const start = this.namesUsed
    if (start + length > this.names.length) {
      const names = Buffer.alloc(Math.max(this.names.length * 2, start + length))
      this.names.copy(names, 0, 0, start)
      this.names = names
      this.namesView = viewOf(names)
    }
    this.namesUsed = start + length
    return start
  }
}

/** A DataView over exactly `bytes`. */
export function viewOf (bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}
