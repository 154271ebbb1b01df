import { DEFAULT_MAX_DEPTH, InflectionDepthError, InflectionMembersError } from './limits.js'
import { hashStep, KEY_HASH_SEED, type RenameTable } from './rename-table.js'

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
/** Number parts after which the number may end. */
const NUMBER_MAY_END = [false, true, true, false, true, false, false, true]

const IN_OBJECT = 1
const IN_ARRAY = 2

const QUOTE = 0x22
const BACKSLASH = 0x5c

const EMPTY = Buffer.alloc(0)
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
const DIGIT = byteTable((b) => b >= 0x30 && b <= 0x39)

/** Runs shorter than this are copied byte by byte: a native copy costs more to call. */
const NATIVE_COPY_MIN = 100000

export class JsonKeyRewriter {
  private readonly table: RenameTable
  private readonly maxDepth: number
  private readonly maxMembers: number
  private readonly keepTopLevel: ReadonlySet<string> | undefined
  private readonly uniqueNames: boolean

  private state = VALUE
  /** IN_OBJECT or IN_ARRAY per open container; grows to maxDepth as the text nests. */
  private stack = new Uint8Array(16)
  private depth = 0
  private members = 0
  /** Bytes of the text before the current chunk, for error offsets. */
  private consumed = 0

  private escape = ESCAPE_NONE
  private numberPart = N_MINUS
  private literal: Buffer = LITERALS[0] as Buffer
  private literalAt = 0

  // The member name being read.
  private keyHash = KEY_HASH_SEED
  private keyLength = 0
  private keyVerbatim = false
  /** The name's bytes from earlier chunks, held back until its end shows whether it is renamed. */
  private heldKey: Buffer = EMPTY
  private heldLength = 0
  /** Names already used in each open object (uniqueNames only). */
  private readonly names: Array<Set<string> | undefined> = []

  // The output of the current chunk.
  private out: Buffer | undefined
  private outLength = 0
  private chunkLength = 0

  constructor (table: RenameTable, options: KeyRewriterOptions = {}) {
    this.table = table
    this.maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH
    if (!Number.isInteger(this.maxDepth) || this.maxDepth < 1) throw new RangeError(`maxDepth must be a positive integer, got ${String(this.maxDepth)}`)
    this.maxMembers = options.maxMembers ?? Number.POSITIVE_INFINITY
    this.keepTopLevel = options.keepTopLevel
    this.uniqueNames = options.uniqueNames ?? false
  }

  /**
   * Rewrites the next chunk of the text. Returns its output: the chunk itself when no
   * name in it changed, else new bytes. The output of all chunks, in order, is the text
   * with its names renamed; a name cut by a chunk's end comes out with the next chunk.
   */
  push (chunk: Buffer): Buffer {
    this.out = undefined
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
    if (this.depth === 0 && (state === AFTER_VALUE || (state === NUMBER && NUMBER_MAY_END[this.numberPart] === true))) {
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

  // The scanner. `runStart` is where the bytes not yet written to the output begin: a
  // run of input copied as is, broken only where a name is replaced.
  private runStart = 0

  private scan (bytes: Buffer, end: number): void {
    let i = 0
    let state = this.state
    while (i < end) {
      switch (state) {
        case STRING: {
          // Most of a body's bytes are here: one table load per byte.
          if (this.escape !== ESCAPE_NONE) {
            i = this.readEscape(bytes, i, end)
            continue
          }
          while (i < end && PLAIN_STRING[bytes[i] as number] === 1) i++
          if (i === end) continue
          const byte = bytes[i] as number
          if (byte === QUOTE) {
            state = AFTER_VALUE
          } else if (byte === BACKSLASH) {
            this.escape = ESCAPE_START
          } else {
            throw this.syntaxError('Bad control character in string', i)
          }
          i++
          continue
        }
        case KEY_STRING:
          this.state = state
          i = this.readKey(bytes, i, end)
          state = this.state
          continue
        case NUMBER:
          i = this.readNumber(bytes, i, end)
          state = this.state
          continue
        case LITERAL: {
          const literal = this.literal
          while (i < end && this.literalAt < literal.length) {
            if (bytes[i] !== literal[this.literalAt]) throw this.syntaxError('Unexpected token', i)
            i++
            this.literalAt++
          }
          if (this.literalAt === literal.length) state = AFTER_VALUE
          continue
        }
        default: {
          const byte = bytes[i] as number
          if (WHITESPACE[byte] === 1) {
            i++
            continue
          }
          // The bytes every member has, without a call: `:` after its name, `,` after its value.
          if (byte === 0x3a && state === COLON) {
            i++
            state = VALUE
            if (i < end && bytes[i] === QUOTE) {
              i++
              state = STRING
            }
            continue
          }
          if (byte === 0x2c && state === AFTER_VALUE && this.depth > 0 && this.stack[this.depth - 1] === IN_OBJECT && i + 1 < end && bytes[i + 1] === QUOTE) {
            if (++this.members > this.maxMembers) throw new InflectionMembersError(this.maxMembers)
            i += 2
            state = KEY_STRING
            this.keyHash = KEY_HASH_SEED
            this.keyLength = 0
            this.keyVerbatim = false
            this.heldLength = 0
            this.keyStart = i
            continue
          }
          this.state = state
          this.readStructure(byte, i)
          state = this.state
          i++
          if (state === KEY_STRING) {
            this.keyHash = KEY_HASH_SEED
            this.keyLength = 0
            this.keyVerbatim = false
            this.heldLength = 0
            this.keyStart = i
          }
        }
      }
    }
    this.state = state
    if (state === KEY_STRING) this.holdKeyTail(bytes, end)
  }

  /** Where the name being read starts in the current chunk (0 when it began in an earlier one). */
  private keyStart = 0

  /** A byte between tokens: the next token starts, or it is punctuation. */
  private readStructure (byte: number, at: number): void {
    const state = this.state
    const top = this.depth === 0 ? 0 : this.stack[this.depth - 1] as number
    if (state === AFTER_VALUE && this.depth === 0) throw this.syntaxError('Unexpected data after JSON', at)
    if (state === COLON) {
      if (byte !== 0x3a) throw this.syntaxError('Expected \':\'', at)
      this.state = VALUE
      return
    }
    if (state === AFTER_VALUE) {
      if (byte === 0x2c) {
        this.state = top === IN_OBJECT ? KEY : VALUE
      } else if ((byte === 0x7d && top === IN_OBJECT) || (byte === 0x5d && top === IN_ARRAY)) {
        this.close()
      } else {
        throw this.syntaxError('Expected \',\' or the end of the container', at)
      }
      return
    }
    if (state === KEY_OR_CLOSE || state === KEY) {
      if (byte === QUOTE) {
        if (++this.members > this.maxMembers) throw new InflectionMembersError(this.maxMembers)
        this.state = KEY_STRING
      } else if (byte === 0x7d && state === KEY_OR_CLOSE) {
        this.close()
      } else {
        throw this.syntaxError('Expected a member name', at)
      }
      return
    }
    // VALUE or VALUE_OR_CLOSE: a value starts.
    if (byte === 0x5d && state === VALUE_OR_CLOSE) {
      this.close()
    } else if (byte === QUOTE) {
      this.state = STRING
    } else if (byte === 0x7b || byte === 0x5b) {
      if (this.depth >= this.maxDepth) throw new InflectionDepthError(this.maxDepth)
      if (this.depth === this.stack.length) this.growStack()
      this.stack[this.depth++] = byte === 0x7b ? IN_OBJECT : IN_ARRAY
      if (byte === 0x7b && this.uniqueNames) this.names[this.depth - 1] = undefined
      this.state = byte === 0x7b ? KEY_OR_CLOSE : VALUE_OR_CLOSE
    } else if (byte === 0x2d || DIGIT[byte] === 1) {
      this.numberPart = byte === 0x2d ? N_MINUS : byte === 0x30 ? N_ZERO : N_INT
      this.state = NUMBER
    } else if (byte === 0x74 || byte === 0x66 || byte === 0x6e) {
      this.literal = LITERALS[byte === 0x74 ? 0 : byte === 0x66 ? 1 : 2] as Buffer
      this.literalAt = 1
      this.state = LITERAL
    } else {
      throw this.syntaxError('Unexpected token', at)
    }
  }

  private growStack (): void {
    const grown = new Uint8Array(Math.min(this.stack.length * 4, this.maxDepth))
    grown.set(this.stack)
    this.stack = grown
  }

  private close (): void {
    this.depth--
    if (this.uniqueNames) this.names[this.depth] = undefined
    this.state = AFTER_VALUE
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

  private readNumber (bytes: Buffer, i: number, end: number): number {
    let part = this.numberPart
    while (i < end) {
      const byte = bytes[i] as number
      if (DIGIT[byte] === 1) {
        if (part === N_ZERO) throw this.syntaxError('Leading zero in number', i)
        part = part === N_MINUS ? (byte === 0x30 ? N_ZERO : N_INT) : part === N_DOT ? N_FRAC : part === N_E || part === N_E_SIGN ? N_EXP : part
      } else if (byte === 0x2e && (part === N_ZERO || part === N_INT)) {
        part = N_DOT
      } else if ((byte === 0x65 || byte === 0x45) && (part === N_ZERO || part === N_INT || part === N_FRAC)) {
        part = N_E
      } else if ((byte === 0x2b || byte === 0x2d) && part === N_E) {
        part = N_E_SIGN
      } else {
        if (NUMBER_MAY_END[part] !== true) throw this.syntaxError('Unterminated number', i)
        this.state = AFTER_VALUE
        return i
      }
      i++
    }
    this.numberPart = part
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
        hash = hashStep(hash, bytes[i] as number)
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

  /** The name ends at `quote`: write it renamed if its name changes. */
  private endKey (bytes: Buffer, quote: number): void {
    if (this.uniqueNames || (this.keepTopLevel !== undefined && this.depth === 1)) {
      const name = this.nameOf(bytes, quote)
      if (this.depth === 1 && this.keepTopLevel?.has(name) === true) {
        this.flushHeld()
        return
      }
      if (this.uniqueNames) this.checkUnique(bytes, quote, name)
    }
    if (this.keyVerbatim) return
    const held = this.heldLength
    if (held > 0) {
      // The name began in an earlier chunk: put it together in the held buffer.
      this.heldKey.set(bytes.subarray(0, quote), held)
      this.heldLength = 0
      const renamed = this.table.lookup(this.heldKey, 0, held + quote, this.keyHash)
      this.write(renamed ?? this.heldKey, 0, renamed === null ? held + quote : renamed.length)
      this.runStart = quote
      return
    }
    const renamed = this.table.lookup(bytes, this.keyStart, quote, this.keyHash)
    if (renamed === null) return
    this.write(bytes, this.runStart, this.keyStart)
    this.write(renamed, 0, renamed.length)
    this.runStart = quote
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
    const raw = this.heldLength > 0 ? Buffer.concat([this.heldKey.subarray(0, this.heldLength), tail]) : tail
    return JSON.parse(`"${raw.toString('utf8')}"`) as string
  }

  private checkUnique (bytes: Buffer, quote: number, name: string): void {
    let renamed = name
    if (!this.keyVerbatim) {
      const source = this.heldLength > 0 ? Buffer.concat([this.heldKey.subarray(0, this.heldLength), bytes.subarray(0, quote)]) : bytes.subarray(this.keyStart, quote)
      const target = this.table.lookup(source, 0, source.length, hashOf(source))
      if (target !== null) renamed = Buffer.from(target).toString('latin1')
    }
    const index = this.depth - 1
    let names = this.names[index]
    if (names === undefined) {
      names = new Set()
      this.names[index] = names
    }
    if (names.has(renamed)) throw new DuplicateNameError(renamed)
    names.add(renamed)
  }

  /** The chunk ends inside a name that may still be renamed: hold its bytes back. */
  private holdKeyTail (bytes: Buffer, end: number): void {
    if (this.keyVerbatim) return
    const from = this.keyStart
    if (this.heldLength === 0) this.write(bytes, this.runStart, from)
    if (this.heldKey === EMPTY) this.heldKey = Buffer.allocUnsafe(MAX_RENAMED_KEY_BYTES)
    this.heldKey.set(bytes.subarray(from, end), this.heldLength)
    this.heldLength += end - from
    // The next chunk continues the name from its first byte.
    this.keyStart = 0
    this.runStart = end
  }

  /** Appends bytes to the current chunk's output. */
  private write (source: Uint8Array, start: number, end: number): void {
    const length = end - start
    if (length <= 0) return
    let out = this.out
    if (out === undefined || this.outLength + length > out.length) out = this.growOutput(length)
    let at = this.outLength
    if (length < NATIVE_COPY_MIN) {
      for (let i = start; i < end; i++) out[at++] = source[i] as number
    } else {
      out.set(source.subarray(start, end), at)
      at += length
    }
    this.outLength = at
  }

  /**
   * Room for `more` bytes. The first allocation is sized to the chunk with a margin, so
   * that renaming (which rarely lengthens a body by more) writes into one buffer.
   */
  private growOutput (more: number): Buffer {
    const wanted = this.outLength + more
    const size = this.out === undefined ? Math.max(wanted, this.chunkLength + (this.chunkLength >> 2) + 64) : wanted * 2
    const grown = Buffer.allocUnsafe(size)
    if (this.out !== undefined) this.out.copy(grown, 0, 0, this.outLength)
    this.out = grown
    return grown
  }

  private takeOutput (chunk: Buffer, end: number): Buffer {
    const runStart = this.runStart
    if (this.out === undefined) return runStart === 0 ? chunk : chunk.subarray(runStart, end)
    this.write(chunk, runStart, end)
    return this.out.subarray(0, this.outLength)
  }

  private syntaxError (message: string, at: number): JsonSyntaxError {
    return new JsonSyntaxError(message, this.consumed + at)
  }
}

function hashOf (bytes: Uint8Array): number {
  let hash = KEY_HASH_SEED
  for (let i = 0; i < bytes.length; i++) hash = hashStep(hash, bytes[i] as number)
  return hash
}
