import t from 'tap'
import { convertKey, JsonKeyRewriter, KEY_CASES, RenameTable, type KeyCase } from '../../gateway/inflection/index.js'

/**
 * Numbers pass as written: the rewriter never turns one into a double and back, so
 * digits a double cannot hold, exponents beyond its range, `-0` and trailing zeros
 * reach the other side byte for byte.
 */
const NUMBERS = [
  '12345678901234567891', '-9223372036854775808', '9007199254740993', '1e400', '-1e-400', '-0', '0', '1.0', '1.50',
  '1E+2', '0.1e-5', '100000000000000000000000', '0.30000000000000000000000000000001', '-0.0', '0e0', '2E-0', '1e+0400',
  '123.456e-789', '-1.7976931348623157e309', '5e-324', '0.000000000000000000000000000000000000000000000000001'
]

function table (style: KeyCase): RenameTable {
  return new RenameTable((key) => convertKey(key, style))
}

function rewrite (text: string, style: KeyCase, chunkSize?: number): string {
  const bytes = Buffer.from(text)
  const rewriter = new JsonKeyRewriter(table(style))
  const out: Buffer[] = []
  const size = chunkSize ?? bytes.length
  for (let at = 0; at < bytes.length; at += size) out.push(Buffer.from(rewriter.push(bytes.subarray(at, at + size))))
  rewriter.end()
  return Buffer.concat(out).toString()
}

/** `number` inside `depth` levels of alternating objects and arrays, with names that change in every style. */
function nested (number: string, depth: number): { text: string, names: string[] } {
  let text = number
  const names: string[] = []
  for (let level = depth; level > 0; level--) {
    if (level % 2 === 0) {
      text = `[0.10,${text},-0]`
    } else {
      const name = `level_${level}_value`
      names.push(name)
      text = `{"before_it":1.0,"${name}":${text},"after_it":1e400}`
    }
  }
  return { text, names }
}

function renamed (text: string, names: string[], style: KeyCase): string {
  let out = text
  for (const name of [...names, 'before_it', 'after_it']) out = out.replaceAll(`"${name}":`, `"${convertKey(name, style)}":`)
  return out
}

t.test('a number as the whole text passes byte for byte, in every style and chunking', async (t) => {
  for (const number of NUMBERS) {
    for (const style of KEY_CASES) {
      for (const chunk of [undefined, 1, 2, 3]) {
        t.equal(rewrite(number, style, chunk), number, `${number} → ${style}, chunks of ${chunk ?? 'all'}`)
        t.equal(rewrite(` \n${number}\t `, style, chunk), ` \n${number}\t `, `${number} with whitespace around`)
      }
    }
  }
})

t.test('numbers inside arrays and objects at depth pass byte for byte, in every style and chunking', async (t) => {
  t.not(convertKey('level_1_value', 'camel'), 'level_1_value', 'the names around the numbers do change')
  for (const number of NUMBERS) {
    for (const depth of [1, 2, 5, 40]) {
      const { text, names } = nested(number, depth)
      for (const style of KEY_CASES) {
        const expected = renamed(text, names, style)
        for (const chunk of [undefined, 1, 7]) {
          const out = rewrite(text, style, chunk)
          t.equal(out, expected, `${number} at depth ${depth} → ${style}, chunks of ${chunk ?? 'all'}`)
        }
      }
    }
    const list = `[${number},${number} , ${number}]`
    t.equal(rewrite(list, 'camel', 1), list, `${number} in a flat array`)
    const members = `{"a_b":${number},"c_d": ${number} ,"e_f":[${number}]}`
    t.equal(rewrite(members, 'pascal', 1), `{"AB":${number},"CD": ${number} ,"EF":[${number}]}`, `${number} as member values`)
  }
})

t.test('the numbers in one text survive together, and JSON.parse reads them as it reads the input', async (t) => {
  const text = `{"all_numbers":[${NUMBERS.join(',')}],"by_name":{${NUMBERS.map((n, i) => `"n_${i}":${n}`).join(',')}}}`
  for (const style of KEY_CASES) {
    const out = rewrite(text, style, 5)
    t.match(out, `[${NUMBERS.join(',')}]`, `${style}: the array, byte for byte`)
    const parsedIn = JSON.parse(text) as { all_numbers: number[] }
    const parsedOut = JSON.parse(out) as Record<string, number[]>
    const list = parsedOut[convertKey('all_numbers', style)] as number[]
    t.ok(list.every((value, i) => Object.is(value, parsedIn.all_numbers[i])), `${style}: the same values, -0 included`)
  }
})
