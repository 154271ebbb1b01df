import { convertKey } from './convert-key.js'
import { DEFAULT_RENAME_TABLE_ENTRIES, RenameTable } from './rename-table.js'
import { KEY_CASES, type KeyCase } from './styles.js'

/**
 * What the gateway knows about one upstream's member names: for each style a client may
 * ask for, the table that renames the upstream's keys to it, and the table that renames
 * a client's keys in that style back to the upstream's spelling.
 *
 * Camel and pascal cannot say where every word started (`streetLine1` may have been
 * `street_line_1` or `street_line1`), so the way back does not trust the rules: every
 * name the response table converts is remembered with the spelling it came from, and a
 * client's key is looked up there first. Only a key this upstream has never sent is
 * converted by the rules (convert-key.ts). The first spelling seen for a name wins: an
 * upstream that sends both `street_line_1` and `street_line1` gets the first one back.
 *
 * Bounded: each table keeps at most `maxEntries` names (the response table's names are
 * also what is remembered), so an upstream that sends endless distinct names stops
 * teaching the gateway and leaves the rest to the rules.
 */
export class KeySpellings {
  readonly nativeCase: KeyCase
  private readonly maxEntries: number
  private readonly toClient = new Map<KeyCase, RenameTable>()
  private readonly toUpstream = new Map<KeyCase, { table: RenameTable, learned: number }>()
  /** Per client style: a name as the client sees it → the upstream's spelling. */
  private readonly learned = new Map<KeyCase, Map<string, string>>()

  constructor (nativeCase: KeyCase, maxEntries: number = DEFAULT_RENAME_TABLE_ENTRIES) {
    this.nativeCase = nativeCase
    this.maxEntries = maxEntries
    for (const style of KEY_CASES) this.learned.set(style, new Map())
  }

  /** Renames this upstream's keys to `style`, learning their spelling on the way. */
  responseTable (style: KeyCase): RenameTable {
    let table = this.toClient.get(style)
    if (table === undefined) {
      const learned = this.learned.get(style) as Map<string, string>
      table = new RenameTable((key) => convertKey(key, style), {
        maxEntries: this.maxEntries,
        onRemember: (source, target) => { if (!learned.has(target)) learned.set(target, source) }
      })
      this.toClient.set(style, table)
    }
    return table
  }

  /** Renames a client's keys written in `style` to this upstream's spelling. */
  requestTable (style: KeyCase): RenameTable {
    const learned = this.learned.get(style) as Map<string, string>
    let entry = this.toUpstream.get(style)
    if (entry === undefined) {
      const nativeCase = this.nativeCase
      entry = { table: new RenameTable((key) => learned.get(key) ?? convertKey(key, nativeCase), { maxEntries: this.maxEntries }), learned: learned.size }
      this.toUpstream.set(style, entry)
    } else if (entry.learned !== learned.size) {
      // A spelling learned since may answer a key the rules answered before.
      entry.table.clear()
      entry.learned = learned.size
    }
    return entry.table
  }

  /** The spelling learned for a name a client writes in `style`, if any. */
  spellingOf (name: string, style: KeyCase): string | undefined {
    return this.learned.get(style)?.get(name)
  }
}

/**
 * The spellings of every upstream, by name, so that what was learned survives a reload
 * that keeps the upstream (a new native case starts afresh), plus the gateway's own
 * tables for the bodies it writes itself, which follow the rules alone.
 */
export class SpellingBook {
  private readonly byUpstream = new Map<string, KeySpellings>()
  private readonly own = new Map<KeyCase, RenameTable>()
  private readonly maxEntries: number

  constructor (maxEntries: number = DEFAULT_RENAME_TABLE_ENTRIES) {
    this.maxEntries = maxEntries
  }

  of (upstream: { name: string, keyCase: KeyCase }): KeySpellings {
    let spellings = this.byUpstream.get(upstream.name)
    if (spellings === undefined || spellings.nativeCase !== upstream.keyCase) {
      spellings = new KeySpellings(upstream.keyCase, this.maxEntries)
      this.byUpstream.set(upstream.name, spellings)
    }
    return spellings
  }

  /** For bodies the gateway writes (problem extension members): the rules to `style`. */
  gatewayTable (style: KeyCase): RenameTable {
    let table = this.own.get(style)
    if (table === undefined) {
      table = new RenameTable((key) => convertKey(key, style), { maxEntries: this.maxEntries })
      this.own.set(style, table)
    }
    return table
  }
}
