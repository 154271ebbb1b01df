import t from 'tap'
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { API_KEY_LENGTH, generateApiKey, parseApiKey } from '../../common/api-key-format.js'
import { REPO_ROOT } from '../helpers/repo-root.js'

/**
 * The secret scanning rules for Portier API keys (deploy/secret-scanning/): gitleaks'
 * rule and GitHub's custom pattern, read from their files as the tools read them, must
 * match every key the real generator makes, no near miss, and nothing committed.
 */
const GITLEAKS = 'deploy/secret-scanning/gitleaks.toml'
const GITHUB = 'deploy/secret-scanning/README.md'
const RULE_ID = 'portier-api-key'

type TomlValue = string | string[] | boolean | number

/**
 * The `[[rules]]` tables of a gitleaks config: just enough TOML for it (one `key =
 * value` a line; literal and basic strings, arrays of them, booleans, integers).
 */
function gitleaksRules (toml: string): Array<Record<string, TomlValue>> {
  const rules: Array<Record<string, TomlValue>> = []
  let current: Record<string, TomlValue> | null = null
  for (const raw of toml.split('\n')) {
    const line = raw.trim()
    if (line === '' || line.startsWith('#')) continue
    if (line.startsWith('[')) {
      current = line === '[[rules]]' ? {} : null
      if (current !== null) rules.push(current)
      continue
    }
    const entry = /^([A-Za-z0-9_-]+)\s*=\s*(.+)$/.exec(line)
    if (entry === null) throw new Error(`${GITLEAKS}: cannot read "${line}"`)
    if (current !== null) current[entry[1] as string] = tomlValue(entry[2] as string)
  }
  return rules
}

function tomlValue (text: string): TomlValue {
  const literal = /^'''(.*)'''$|^'([^']*)'$/.exec(text)
  if (literal !== null) return (literal[1] ?? literal[2]) as string
  // Basic strings and arrays of them are JSON for what a gitleaks rule holds.
  if (/^["[]/.test(text) || /^(true|false|-?\d+)$/.test(text)) return JSON.parse(text) as TomlValue
  throw new Error(`${GITLEAKS}: cannot read the value ${text}`)
}

/** GitHub's custom pattern as GitHub runs it: before, the secret format, after. */
function githubPattern (readme: string): RegExp {
  const fields = new Map<string, string>()
  for (const line of readme.split('\n')) {
    const cells = line.split(/(?<!\\)\|/).slice(1, -1).map((cell) => cell.trim().replace(/\\\|/g, '|'))
    const value = /^`(.+)`$/.exec(cells[1] ?? '')?.[1]
    if (cells[0] !== undefined && value !== undefined) fields.set(cells[0], value)
  }
  const field = (name: string): string => {
    const value = fields.get(name)
    if (value === undefined) throw new Error(`${GITHUB}: no "${name}" row`)
    return value
  }
  // \A and \z are the start and end of the text: ^ and $ without the m flag.
  const boundary = (text: string): string => text.replace(/\\A/g, '^').replace(/\\z/g, '$')
  return new RegExp(`(?:${boundary(field('Before secret'))})(${field('Secret format')})(?:${boundary(field('After secret'))})`, 'g')
}

const rules = gitleaksRules(readFileSync(join(REPO_ROOT, GITLEAKS), 'utf8'))
const rule = rules.find((r) => r.id === RULE_ID)
// gitleaks runs Go's RE2; this regex uses nothing JavaScript reads otherwise (\b is ASCII in both without the u flag).
const gitleaks = new RegExp(String(rule?.regex), 'g')
const github = githubPattern(readFileSync(join(REPO_ROOT, GITHUB), 'utf8'))
const SCANNERS: Array<[string, RegExp]> = [['gitleaks', gitleaks], ['GitHub', github]]

/** What a scanner reports in `text`: the keys it found. */
function found (scanner: RegExp, text: string): string[] {
  return [...text.matchAll(scanner)].map((m) => m[1] ?? m[0])
}

t.test('the gitleaks rule is there, with its keyword', async (t) => {
  t.ok(rule !== undefined, `a [[rules]] table with id = "${RULE_ID}"`)
  t.same(rule?.keywords, ['ptk_'], 'keywords = ["ptk_"]: gitleaks runs the regex only on text holding it')
  t.equal(typeof rule?.regex, 'string', 'a regex')
})

t.test('both match every generated key, alone and in its usual places', async (t) => {
  for (const [name, scanner] of SCANNERS) {
    const misses: string[] = []
    for (let i = 0; i < 200; i++) {
      const { key } = generateApiKey()
      for (const text of [key, `X-API-Key: ${key}\n`, `PORTIER_KEY="${key}"`, `{"key":"${key}"}`, `curl -H 'x-api-key: ${key}'`, `${key}.`]) {
        if (found(scanner, text).join() !== key) misses.push(text)
      }
    }
    t.same(misses, [], `${name}: 200 keys, each found exactly`)
  }
})

t.test('neither matches a near miss', async (t) => {
  const { key } = generateApiKey()
  t.equal(key.length, API_KEY_LENGTH, 'a key is API_KEY_LENGTH characters')
  const body = key.slice(4)
  const nearMisses: Array<[string, string]> = [
    ['another prefix', `ptx_${body}`],
    ['an upper-case prefix', `PTK_${body}`],
    ['a prefix glued to a word', `xptk_${body}`],
    ['a prefix glued by _', `my_ptk_${body}`],
    ['a lookup id one short', `ptk_${body.slice(1)}`],
    ['a lookup id one long', `ptk_a${body}`],
    ['a checksum one short (truncated)', key.slice(0, -1)],
    ['a checksum one long', `${key}a`],
    ['a checksum glued by _', `${key}_x`],
    ['no checksum at all', key.slice(0, -6)],
    ['half a key', key.slice(0, 40)],
    ['a character outside base62', `${key.slice(0, 30)}-${key.slice(31)}`],
    ['no separator', `ptk_${body.replace('_', 'a')}`],
    ['an elided example', `ptk_${body.slice(0, 4)}…`]
  ]
  for (const [name, scanner] of SCANNERS) {
    for (const [what, text] of nearMisses) t.same(found(scanner, text), [], `${name}: ${what}`)
  }
  // The checksum is SHA-256 of the rest: beyond a regex. A key of the right shape with a wrong one is still reported.
  const wrongChecksum = `${key.slice(0, -6)}${key.endsWith('aaaaaa') ? 'bbbbbb' : 'aaaaaa'}`
  t.equal(parseApiKey(wrongChecksum), null, 'the gateway refuses a wrong checksum')
  for (const [name, scanner] of SCANNERS) t.same(found(scanner, wrongChecksum), [wrongChecksum], `${name}: reports the right shape anyway (a regex cannot verify the checksum)`)
})

t.test('nothing committed matches: a literal key in the repository would be a leak', async (t) => {
  const files = execFileSync('git', ['ls-files', '-z'], { cwd: REPO_ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).split('\0').filter((f) => f !== '')
  t.ok(files.length > 100, `${files.length} tracked files`)
  const hits: string[] = []
  let read = 0
  for (const file of files) {
    const path = join(REPO_ROOT, file)
    // A file deleted in the working tree is not there to scan; a binary one holds no text key.
    if (!existsSync(path)) continue
    const bytes = readFileSync(path)
    if (bytes.includes(0)) continue
    read++
    const text = bytes.toString('utf8')
    if (!text.includes('ptk_')) continue
    for (const [name, scanner] of SCANNERS) for (const match of found(scanner, text)) hits.push(`${file}: ${name} finds ${match.slice(0, 8)}…`)
  }
  t.ok(read > 100, `${read} text files read`)
  t.same(hits, [], 'no file holds a key (write examples as ptk_3hG2…)')
})
