import { DEFAULT_MAX_DEPTH, InflectionDepthError, InflectionMembersError } from './limits.js'
import { BODY_START, ENTRY_INTS, KEY_HASH_SEED, UNKNOWN_KEY, viewOf, type RenameTable } from './rename-table.js'

/**
 * Renames the object member names of a JSON text as it streams, on its bytes, and copies
 * every other byte exactly: numbers as written (`12345678901234567891`, `1e400`, `-0`,
 * `1.0`), strings with their escapes, whitespace. It never builds a value, so a value
 * cannot change, and it holds no more than one member name between chunks, so its
 * memory does not grow with the body.
 *
 * It checks the JSON grammar (RFC 8259) as it goes and throws JsonSyntaxError at the
 * first byte that breaks it, or at end() when the text is incomplete. It does not check
 * UTF-8: bytes inside strings are copied, not decoded.
 *
 * A member name is renamed only when it is written with ASCII letters, digits, `_` and
 * `-` alone, without escapes, in at most MAX_RENAMED_KEY_BYTES bytes; every other name
 * passes as written (the key rules could not split it into words anyway). Two names of
 * one object may end up the same (`first_name` and `firstName`, to camel): the output
 * keeps both members, in order, as JSON allows; a parser that keeps the last one sees
 * the later value. A rewriter with `uniqueNames` refuses that instead (DuplicateNameError).
 *
 * Why not a streaming JSON library: the ones measured (stream-json, @streamparser/json,
 * jsonparse, clarinet) decode every token into a value and lose the bytes it was written
 * with, and ran several times slower than JSON.parse; see docs/contract.md.
 */

/** Longest member name, in bytes, that is renamed; a longer one passes as written. */
export const MAX_RENAMED_KEY_BYTES = 1_024

export class JsonSyntaxError extends Error {
  /** Offset of the offending byte from the start of the text (its length at end()). */
  readonly offset: number
  constructor (message: string, offset: number) {
    super(`${message} at byte ${offset}`)
    this.name = 'JsonSyntaxError'
    this.offset = offset
  }
}

/** Two members of one object carry the same name once renamed. */
export class DuplicateNameError extends Error {
  readonly code = 'duplicate_member'
  readonly memberName: string
  constructor (name: string) {
    super(`two members of one object are named ${JSON.stringify(name)}`)
    this.name = 'DuplicateNameError'
    this.memberName = name
  }
}

export interface KeyRewriterOptions {
  /** Deepest nesting of objects and arrays; default DEFAULT_MAX_DEPTH (512). */
  maxDepth?: number
  /** Most object members, all depths together; default unlimited. */
  maxMembers?: number
  /** Names of the top-level object's members that keep their names (problem+json's standard members). */
  keepTopLevel?: ReadonlySet<string>
  /** Refuse an object whose members, renamed, share a name (for bodies the gateway forwards). */
  uniqueNames?: boolean
}

// Where the scanner is. Between tokens:
const VALUE = 0 // a value must come (after `:`, `,` in an array, or at the start)
const VALUE_OR_CLOSE = 1 // after `[`
const KEY_OR_CLOSE = 2 // after `{`
const KEY = 3 // after `,` in an object
const COLON = 4 // after a member name
const AFTER_VALUE = 5 // `,` or the container's close; at depth 0, whitespace only
// Inside a token:
const STRING = 7
const KEY_STRING = 8
const NUMBER = 9
const LITERAL = 10

// Inside a string: after a backslash, or reading the hex digits of `\u` (ESCAPE_HEX + digits left).
const ESCAPE_NONE = 0
const ESCAPE_START = 1
const ESCAPE_HEX = 2

// Inside a number: which part of `-? int frac? exp?` was read last.
const N_MINUS = 0
const N_ZERO = 1
const N_INT = 2
const N_DOT = 3
const N_FRAC = 4
const N_E = 5
const N_E_SIGN = 6
const N_EXP = 7
/** Number parts after which the number may end, one bit each. */
const NUMBER_MAY_END = (1 << N_ZERO) | (1 << N_INT) | (1 << N_FRAC) | (1 << N_EXP)

const IN_OBJECT = 1
const IN_ARRAY = 2

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const COLON_BYTE = 0x3a
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d
/** The prime of hashStep, inlined: the table's hashes are FNV-1a over the name's bytes. */
const FNV_PRIME = 0x01000193

const EMPTY: Buffer = Buffer.alloc(0)
const EMPTY_VIEW = viewOf(EMPTY)
/** The names of open objects for a rewriter without uniqueNames: never written. */
const NO_NAMES: Array<Set<string> | undefined> = []
const LITERALS = [Buffer.from('true'), Buffer.from('false'), Buffer.from('null')]

function byteTable (test: (byte: number) => boolean): Uint8Array {
  const table = new Uint8Array(256)
  for (let byte = 0; byte < 256; byte++) table[byte] = test(byte) ? 1 : 0
  return table
}
/** Bytes that go on a string without a second look: not `"`, `\` or a control character. */
const PLAIN_STRING = byteTable((b) => b >= 0x20 && b !== QUOTE && b !== BACKSLASH)
/** Bytes of a name the rewriter may rename. */
const NAME_BYTE = byteTable((b) => (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b === 0x5f || b === 0x2d)
const WHITESPACE = byteTable((b) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d)
const HEX = byteTable((b) => (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66))
const ESCAPABLE = byteTable((b) => b === QUOTE || b === BACKSLASH || b === 0x2f || b === 0x62 || b === 0x66 || b === 0x6e || b === 0x72 || b === 0x74)

export class JsonKeyRewriter {
  private readonly table: RenameTable
  private readonly maxDepth: number
  private readonly maxMembers: number
  private readonly keepTopLevel: ReadonlySet<string> | undefined
  private readonly uniqueNames: boolean

  private state = VALUE
  /** IN_OBJECT or IN_ARRAY per open container. */
  private readonly stack: number[] = []
  private depth = 0
  /** The innermost open container (IN_OBJECT or IN_ARRAY), 0 at depth 0. */
  private top = 0
  private members = 0
  /** Bytes of the text before the current chunk, for error offsets. */
  private consumed = 0

  private escape = ESCAPE_NONE
  private numberPart = N_MINUS
  private literal: Buffer = LITERALS[0] as Buffer
  private literalAt = 0

  /** The table's entry for the last member name, from which the next one is guessed. */
  private previousEntry = BODY_START

  // A member name read the long way: cut by a chunk's end, not a plain name, or needed as a string.
  private keyHash = KEY_HASH_SEED
  private keyLength = 0
  private keyVerbatim = false
  /** Where the name being read starts in the current chunk (0 when it began in an earlier one). */
  private keyStart = 0
  /** The name's bytes from earlier chunks, held back until its end shows whether it is renamed. */
  private heldKey: Buffer = EMPTY
  private heldLength = 0
  /** The name's bytes from earlier chunks when it is needed as a string (uniqueNames, keepTopLevel). */
  private nameParts: Buffer[] | undefined
  /** Names already used in each open object (uniqueNames only). */
  private readonly names: Array<Set<string> | undefined>

  // The output of the current chunk: EMPTY until a name changes (scan() starts with it EMPTY).
  private out: Buffer = EMPTY
  private outLength = 0
  private chunkLength = 0
  /** Where the bytes not yet written to the output begin: a run of input copied as is, broken only where a name is replaced. */
  private runStart = 0

  constructor (table: RenameTable, options: KeyRewriterOptions = {}) {
    this.table = table
    this.maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH
    if (!Number.isInteger(this.maxDepth) || this.maxDepth < 1) throw new RangeError(`maxDepth must be a positive integer, got ${String(this.maxDepth)}`)
    this.maxMembers = options.maxMembers ?? Number.POSITIVE_INFINITY
    this.keepTopLevel = options.keepTopLevel
    this.uniqueNames = options.uniqueNames ?? false
    this.names = this.uniqueNames ? [] : NO_NAMES
  }

  /**
   * Rewrites the next chunk of the text. Returns its output: the chunk itself when no
   * name in it changed, else new bytes. The output of all chunks, in order, is the text
   * with its names renamed; a name cut by a chunk's end comes out with the next chunk.
   */
  push (chunk: Buffer): Buffer {
    this.out = EMPTY
    this.outLength = 0
    this.runStart = 0
    const end = chunk.length
    this.chunkLength = end
    this.scan(chunk, end)
    const out = this.takeOutput(chunk, end)
    this.consumed += end
    return out
  }

  /** Says the text is complete; throws JsonSyntaxError if it is not. */
  end (): void {
    const state = this.state
    if (this.depth === 0 && (state === AFTER_VALUE || (state === NUMBER && ((NUMBER_MAY_END >> this.numberPart) & 1) === 1))) {
      this.state = AFTER_VALUE
      return
    }
    throw new JsonSyntaxError('Unexpected end of JSON', this.consumed)
  }

  /** Rewrites a whole text held in one buffer. */
  rewriteAll (text: Buffer): Buffer {
    const out = this.push(text)
    this.end()
    return out
  }

  /**
   * The scanner: one loop, its state in locals (written back at the chunk's end and
   * around the rare calls that read them from fields). A member name that is a plain
   * name within the chunk is renamed inline: the table's guess (the entry that followed
   * the previous name last time) confirmed by comparing bytes, else a hash and a probe.
   */
  private scan (bytes: Buffer, end: number): void {
    const table = this.table
    let namesView = table.namesView
    const view = viewOf(bytes)
    let entries = table.entries
    let following = table.following
    let entryEnd = table.entryEnd
    const maxMembers = this.maxMembers
    const uniqueNames = this.uniqueNames
    const keepsTopLevel = this.keepTopLevel !== undefined
    let state = this.state
    let depth = this.depth
    let top = this.top
    const stack = this.stack
    let members = this.members
    let numberPart = this.numberPart
    let previous = this.previousEntry
    let out = this.out
    let outView = EMPTY_VIEW
    let outLength = this.outLength
    let run = this.runStart
    let i = 0
    while (i < end) {
      switch (state) {
        case STRING: {
          if (this.escape !== ESCAPE_NONE) {
            i = this.readEscape(bytes, i, end)
            continue
          }
          // Most of a body's bytes are here: four at a time while none of them is `"`, `\`
          // or a control character (each test is nonzero when a byte of the word is zero,
          // or below 0x20), then one at a time up to the byte that stops the string.
          while (i + 4 <= end) {
            const word = view.getInt32(i, true)
            const quotes = word ^ 0x22222222
            const backslashes = word ^ 0x5c5c5c5c
            if (((((quotes - 0x01010101) & ~quotes) | ((backslashes - 0x01010101) & ~backslashes) | ((word - 0x20202020) & ~word)) & 0x80808080) !== 0) break
            i += 4
          }
          let byte = 0
          while (i < end) {
            byte = bytes[i] as number
            if (PLAIN_STRING[byte] === 0) break
            i++
          }
          if (i === end) continue
          if (byte === QUOTE) state = AFTER_VALUE
          else if (byte === BACKSLASH) this.escape = ESCAPE_START
          else throw this.syntaxError('Bad control character in string', i)
          i++
          continue
        }
        case AFTER_VALUE: {
          const byte = bytes[i] as number
          if (byte === COMMA) {
            if (top === IN_OBJECT) {
              i++
              state = KEY
              continue
            }
            if (top === IN_ARRAY) {
              i++
              state = VALUE
              continue
            }
          } else if ((byte === CLOSE_OBJECT && top === IN_OBJECT) || (byte === CLOSE_ARRAY && top === IN_ARRAY)) {
            i++
            depth--
            top = depth === 0 ? 0 : stack[depth - 1] as number
            if (uniqueNames) this.names[depth] = undefined
            continue
          } else if (WHITESPACE[byte] === 1) {
            i = skipWhitespace(bytes, i + 1, end)
            continue
          }
          if (depth === 0) throw this.syntaxError('Unexpected data after JSON', i)
          throw this.syntaxError('Expected \',\' or the end of the container', i)
        }
        case KEY:
        case KEY_OR_CLOSE: {
          const byte = bytes[i] as number
          if (byte !== QUOTE) {
            if (byte === CLOSE_OBJECT && state === KEY_OR_CLOSE) {
              i++
              depth--
              top = depth === 0 ? 0 : stack[depth - 1] as number
              if (uniqueNames) this.names[depth] = undefined
              state = AFTER_VALUE
              continue
            }
            if (WHITESPACE[byte] === 1) {
              i = skipWhitespace(bytes, i + 1, end)
              continue
            }
            throw this.syntaxError('Expected a member name', i)
          }
          if (++members > maxMembers) throw new InflectionMembersError(maxMembers)
          i++
          state = KEY_STRING
          if (keepsTopLevel && depth === 1) {
            this.startKey(i)
            continue
          }
          // A plain name that ends in this chunk is renamed here. First the guess: the
          // guessed name's bytes, then the closing quote; else hash the name and probe.
          let entry = 0
          let close = 0
          const guess = following[previous] as number
          if (guess !== 0 && guess < entryEnd) {
            const at = guess * ENTRY_INTS
            close = i + (entries[at + 1] as number)
            if (close < end && bytes[close] === QUOTE && sameBytes(view, i, close, namesView, entries[at] as number)) entry = guess
          }
          let target = EMPTY_VIEW
          let targetStart = 0
          let targetLength = -1
          if (entry === 0) {
            let hash = KEY_HASH_SEED
            close = i
            while (close < end) {
              const byte = bytes[close] as number
              if (NAME_BYTE[byte] === 0) break
              hash = Math.imul(hash ^ byte, FNV_PRIME)
              close++
            }
            if (close === end || bytes[close] !== QUOTE || close - i > MAX_RENAMED_KEY_BYTES) {
              this.startKey(i)
              continue
            }
            // The table may grow: read its arrays again.
            entry = table.entryFor(bytes, i, close, hash)
            namesView = table.namesView
            entries = table.entries
            following = table.following
            entryEnd = table.entryEnd
            following[previous] = entry
            if (entry === 0) {
              const unremembered = table.unremembered
              if (unremembered !== null) {
                target = viewOf(unremembered)
                targetLength = unremembered.length
              }
            }
          }
          if (uniqueNames) {
            this.depth = depth
            this.checkUnique(entry !== 0 ? table.renamedName(entry) : latin1Or(table.unremembered, bytes.toString('latin1', i, close)))
          }
          if (entry !== 0) {
            previous = entry
            target = namesView
            targetStart = entries[entry * ENTRY_INTS + 2] as number
            targetLength = entries[entry * ENTRY_INTS + 3] as number
          } else {
            previous = UNKNOWN_KEY
          }
          if (targetLength >= 0) {
            // Write the run before the name, then the new name; the run goes on from the quote.
            const needed = outLength + (i - run) + targetLength
            if (needed > out.length) {
              out = this.growOutput(out, outLength, needed, end)
              outView = viewOf(out)
            }
            copyBytes(outView, outLength, view, run, i)
            outLength += i - run
            copyBytes(outView, outLength, target, targetStart, targetStart + targetLength)
            outLength += targetLength
            run = close
          }
          i = close + 1
          state = COLON
          continue
        }
        case COLON: {
          const byte = bytes[i] as number
          if (byte === COLON_BYTE) {
            i++
            state = VALUE
            if (i < end && bytes[i] === QUOTE) {
              i++
              state = STRING
            }
            continue
          }
          if (WHITESPACE[byte] === 1) {
            i = skipWhitespace(bytes, i + 1, end)
            continue
          }
          throw this.syntaxError('Expected \':\'', i)
        }
        case VALUE:
        case VALUE_OR_CLOSE: {
          const byte = bytes[i] as number
          if (byte === QUOTE) {
            state = STRING
          } else if ((byte >= 0x30 && byte <= 0x39) || byte === 0x2d) {
            numberPart = byte === 0x2d ? N_MINUS : byte === 0x30 ? N_ZERO : N_INT
            state = NUMBER
          } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
            if (depth >= this.maxDepth) throw new InflectionDepthError(this.maxDepth)
            top = byte === OPEN_OBJECT ? IN_OBJECT : IN_ARRAY
            stack[depth++] = top
            if (top === IN_OBJECT) {
              if (uniqueNames) this.names[depth - 1] = undefined
              state = KEY_OR_CLOSE
            } else {
              state = VALUE_OR_CLOSE
            }
          } else if (byte === CLOSE_ARRAY && state === VALUE_OR_CLOSE) {
            depth--
            top = depth === 0 ? 0 : stack[depth - 1] as number
            state = AFTER_VALUE
          } else if (byte === 0x74 || byte === 0x66 || byte === 0x6e) {
            this.literal = LITERALS[byte === 0x74 ? 0 : byte === 0x66 ? 1 : 2] as Buffer
            this.literalAt = 1
            state = LITERAL
          } else if (WHITESPACE[byte] === 1) {
            i = skipWhitespace(bytes, i + 1, end)
            continue
          } else {
            throw this.syntaxError('Unexpected token', i)
          }
          i++
          continue
        }
        case NUMBER: {
          let part = numberPart
          while (i < end) {
            const byte = bytes[i] as number
            if (byte >= 0x30 && byte <= 0x39) {
              if (part === N_INT || part === N_FRAC || part === N_EXP) {
                // One more digit of a run: the common case.
                i++
                continue
              }
              if (part === N_ZERO) throw this.syntaxError('Leading zero in number', i)
              if (part === N_MINUS) part = byte === 0x30 ? N_ZERO : N_INT
              else if (part === N_DOT) part = N_FRAC
              else if (part === N_E || part === N_E_SIGN) part = N_EXP
            } else if (byte === 0x2e && (part === N_ZERO || part === N_INT)) {
              part = N_DOT
            } else if ((byte === 0x65 || byte === 0x45) && (part === N_ZERO || part === N_INT || part === N_FRAC)) {
              part = N_E
            } else if ((byte === 0x2b || byte === 0x2d) && part === N_E) {
              part = N_E_SIGN
            } else {
              if (((NUMBER_MAY_END >> part) & 1) === 0) throw this.syntaxError('Unterminated number', i)
              state = AFTER_VALUE
              break
            }
            i++
          }
          numberPart = part
          continue
        }
        case LITERAL: {
          const literal = this.literal
          let at = this.literalAt
          while (i < end && at < literal.length) {
            if (bytes[i] !== literal[at]) throw this.syntaxError('Unexpected token', i)
            i++
            at++
          }
          this.literalAt = at
          if (at === literal.length) state = AFTER_VALUE
          continue
        }
        default: {
          // KEY_STRING: a member name read the long way, with the state in fields.
          this.state = state
          this.depth = depth
          this.out = out
          this.outLength = outLength
          this.runStart = run
          i = this.readKey(bytes, i, end)
          state = this.state
          if (out !== this.out) {
            out = this.out
            outView = viewOf(out)
          }
          outLength = this.outLength
          run = this.runStart
          previous = UNKNOWN_KEY
          namesView = table.namesView
          entries = table.entries
          following = table.following
          entryEnd = table.entryEnd
        }
      }
    }
    this.state = state
    this.depth = depth
    this.top = top
    this.members = members
    this.numberPart = numberPart
    this.previousEntry = previous
    this.out = out
    this.outLength = outLength
    this.runStart = run
    if (state === KEY_STRING) this.holdKeyTail(bytes, end)
  }

  /** A member name starts at `at`, to be read the long way. */
  private startKey (at: number): void {
    this.keyHash = KEY_HASH_SEED
    this.keyLength = 0
    this.keyVerbatim = false
    this.heldLength = 0
    this.keyStart = at
  }

  /** Escape sequences, in value strings and in names alike. Returns the next index. */
  private readEscape (bytes: Buffer, i: number, end: number): number {
    while (i < end && this.escape !== ESCAPE_NONE) {
      const byte = bytes[i] as number
      if (this.escape === ESCAPE_START) {
        if (byte === 0x75) this.escape = ESCAPE_HEX + 4
        else if (ESCAPABLE[byte] === 1) this.escape = ESCAPE_NONE
        else throw this.syntaxError('Bad escaped character', i)
      } else {
        if (HEX[byte] !== 1) throw this.syntaxError('Bad Unicode escape', i)
        this.escape = this.escape === ESCAPE_HEX + 1 ? ESCAPE_NONE : this.escape - 1
      }
      i++
    }
    return i
  }

  /**
   * Reads a member name up to its closing quote (or the chunk's end), hashing the bytes
   * it may rename. At the quote, writes the run before the name and the new name when
   * it changes.
   */
  private readKey (bytes: Buffer, i: number, end: number): number {
    if (this.escape !== ESCAPE_NONE) return this.readEscape(bytes, i, end)
    if (!this.keyVerbatim) {
      let hash = this.keyHash
      const from = i
      while (i < end && NAME_BYTE[bytes[i] as number] === 1) {
        hash = Math.imul(hash ^ (bytes[i] as number), FNV_PRIME)
        i++
      }
      this.keyHash = hash
      this.keyLength += i - from
      if (this.keyLength > MAX_RENAMED_KEY_BYTES) this.passKeyAsWritten()
      if (i === end) return i
    }
    const byte = bytes[i] as number
    if (byte === QUOTE) {
      this.endKey(bytes, i)
      this.state = COLON
      return i + 1
    }
    if (!this.keyVerbatim) this.passKeyAsWritten()
    if (byte === BACKSLASH) {
      this.escape = ESCAPE_START
      return i + 1
    }
    if (byte < 0x20) throw this.syntaxError('Bad control character in string', i)
    while (i < end && PLAIN_STRING[bytes[i] as number] === 1) i++
    return i
  }

  /**
   * The name cannot be renamed: it goes out as written. Bytes held from earlier chunks
   * are written now, ahead of this chunk's run.
   */
  private passKeyAsWritten (): void {
    this.keyVerbatim = true
    this.flushHeld()
  }

  /** The name read the long way ends at `quote`: write it renamed if its name changes. */
  private endKey (bytes: Buffer, quote: number): void {
    if (this.uniqueNames || (this.keepTopLevel !== undefined && this.depth === 1)) {
      const name = this.nameOf(bytes, quote)
      if (this.depth === 1 && this.keepTopLevel?.has(name) === true) {
        // A kept name still counts among its object's names.
        if (this.uniqueNames) this.checkUnique(name)
        this.flushHeld()
        return
      }
      if (this.uniqueNames) this.checkUnique(this.keyVerbatim ? name : latin1Or(this.renamedKey(bytes, quote), name))
    }
    if (this.keyVerbatim) return
    const renamed = this.renamedKey(bytes, quote)
    const held = this.heldLength
    if (held > 0) {
      this.heldLength = 0
      this.write(renamed ?? this.heldKey, 0, renamed === null ? held + quote : renamed.length)
      this.runStart = quote
      return
    }
    if (renamed === null) return
    this.write(bytes, this.runStart, this.keyStart)
    this.write(renamed, 0, renamed.length)
    this.runStart = quote
  }

  /** The new name of the plain name ending at `quote`; its bytes from earlier chunks join the held ones. */
  private renamedKey (bytes: Buffer, quote: number): Buffer | null {
    const held = this.heldLength
    if (held === 0) return this.table.lookup(bytes, this.keyStart, quote, this.keyHash) as Buffer | null
    this.heldKey.set(bytes.subarray(0, quote), held)
    return this.table.lookup(this.heldKey, 0, held + quote, this.keyHash) as Buffer | null
  }

  private flushHeld (): void {
    if (this.heldLength > 0) {
      this.write(this.heldKey, 0, this.heldLength)
      this.heldLength = 0
    }
  }

  /** The name as written, decoded (escapes included): for uniqueNames and keepTopLevel, never on the hot path. */
  private nameOf (bytes: Buffer, quote: number): string {
    const tail = bytes.subarray(this.keyStart, quote)
    const parts = this.nameParts
    const raw = parts !== undefined && parts.length > 0 ? Buffer.concat([...parts, tail]) : tail
    if (parts !== undefined) parts.length = 0
    // A plain name is its Latin-1 string; any other is decoded as JSON would.
    return this.keyVerbatim ? JSON.parse(`"${raw.toString('utf8')}"`) as string : raw.toString('latin1')
  }

  private checkUnique (renamed: string): void {
    const index = this.depth - 1
    let names = this.names[index]
    if (names === undefined) {
      names = new Set()
      this.names[index] = names
    }
    if (names.has(renamed)) throw new DuplicateNameError(renamed)
    names.add(renamed)
  }

  /** The chunk ends inside a name: hold back its bytes that may still be renamed or are needed as a string. */
  private holdKeyTail (bytes: Buffer, end: number): void {
    const from = this.keyStart
    // The next chunk continues the name from its first byte.
    this.keyStart = 0
    if (this.uniqueNames || (this.keepTopLevel !== undefined && this.depth === 1)) (this.nameParts ??= []).push(Buffer.from(bytes.subarray(from, end)))
    if (this.keyVerbatim) return
    if (this.heldLength === 0) this.write(bytes, this.runStart, from)
    if (this.heldKey === EMPTY) this.heldKey = Buffer.allocUnsafe(MAX_RENAMED_KEY_BYTES)
    this.heldKey.set(bytes.subarray(from, end), this.heldLength)
    this.heldLength += end - from
    this.runStart = end
  }

  /** Appends bytes to the current chunk's output. */
  private write (source: Buffer, start: number, end: number): void {
    const length = end - start
    if (length <= 0) return
    let out = this.out
    if (this.outLength + length > out.length) {
      out = this.growOutput(out, this.outLength, this.outLength + length, this.chunkLength)
      this.out = out
    }
    let at = this.outLength
    for (let i = start; i < end; i++) out[at++] = source[i] as number
    this.outLength = at
  }

  /**
   * A buffer of at least `needed` bytes holding the first `used` of `out`. The first is
   * the chunk's size with a small margin: renaming rarely lengthens a body, and a buffer
   * no larger than needed is more often memory the allocator has handed out before (a
   * fresh page costs a fault when first written).
   */
  private growOutput (out: Buffer, used: number, needed: number, chunkLength: number): Buffer {
    const size = out === EMPTY ? Math.max(needed, chunkLength + (chunkLength >> 5) + 64) : needed + (chunkLength >> 2) + 64
    const grown = Buffer.allocUnsafe(size)
    if (used > 0) out.copy(grown, 0, 0, used)
    return grown
  }

  private takeOutput (chunk: Buffer, end: number): Buffer {
    const runStart = this.runStart
    if (this.out === EMPTY) return runStart === 0 ? chunk : chunk.subarray(runStart, end)
    this.write(chunk, runStart, end)
    return this.out.subarray(0, this.outLength)
  }

  private syntaxError (message: string, at: number): JsonSyntaxError {
    return new JsonSyntaxError(message, this.consumed + at)
  }
}

/** The index of the first byte from `i` that is not whitespace (or `end`). */
function skipWhitespace (bytes: Buffer, i: number, end: number): number {
  while (i < end && WHITESPACE[bytes[i] as number] === 1) i++
  return i
}

/** Copies `from[start, end)` to `to` at `at`, four bytes at a time (the last four may overlap the ones before). */
function copyBytes (to: DataView, at: number, from: DataView, start: number, end: number): void {
  const length = end - start
  if (length >= 4) {
    const last = length - 4
    for (let k = 0; k < last; k += 4) to.setInt32(at + k, from.getInt32(start + k, true), true)
    to.setInt32(at + last, from.getInt32(start + last, true), true)
  } else {
    for (let k = 0; k < length; k++) to.setUint8(at + k, from.getUint8(start + k))
  }
}

/** Whether `a[start, end)` holds the bytes at `b[from]`, four at a time. */
function sameBytes (a: DataView, start: number, end: number, b: DataView, from: number): boolean {
  const length = end - start
  if (length >= 4) {
    const last = length - 4
    for (let k = 0; k < last; k += 4) {
      if (a.getInt32(start + k, true) !== b.getInt32(from + k, true)) return false
    }
    return a.getInt32(start + last, true) === b.getInt32(from + last, true)
  }
  for (let k = 0; k < length; k++) {
    if (a.getUint8(start + k) !== b.getUint8(from + k)) return false
  }
  return true
}

function latin1Or (bytes: Buffer | null, otherwise: string): string {
  return bytes === null ? otherwise : bytes.toString('latin1')
}
