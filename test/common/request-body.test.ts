import t from 'tap'
import { PassThrough } from 'node:stream'
import { createBodyBudget } from '../../common/body-budget.js'
import { readBodyInto } from '../../common/request-body.js'

/**
 * The body reader behind every JSON parser: limits, the shared budget, what is charged
 * for small chunks, and that a failure gives the budget back.
 */

const KIB = 1024

async function feed (chunks: Buffer[], end = true): Promise<PassThrough> {
  const stream = new PassThrough()
  for (const chunk of chunks) stream.write(chunk)
  if (end) stream.end()
  return stream
}

t.test('happy: a body arrives whole, however it is cut, with or without a declared length', async (t) => {
  const text = Buffer.from(JSON.stringify({ a: 'x'.repeat(100 * KIB) }))
  for (const [label, size] of [['one chunk', text.length], ['1-byte chunks', 1], ['7 KiB chunks', 7 * KIB], ['40 KiB chunks', 40 * KIB]] as const) {
    const chunks: Buffer[] = []
    for (let i = 0; i < text.length; i += size) chunks.push(text.subarray(i, i + size))
    for (const declared of [text.length, undefined]) {
      const budget = createBodyBudget(1024 * KIB)
      const holding = budget.hold()
      const body = await readBodyInto(await feed(chunks), declared, 1024 * KIB, holding)
      t.ok(body.equals(text), `${label}, ${declared === undefined ? 'chunked' : 'Content-Length'}: same bytes`)
      t.ok(budget.usedBytes >= text.length && budget.usedBytes <= 2 * text.length + 16 * KIB,
        `charged ${budget.usedBytes} bytes for ${text.length}, until released`)
      holding.release()
      t.equal(budget.usedBytes, 0, 'released')
    }
  }
})

t.test('security: a body dripped a byte at a time is charged for what it holds, not per chunk', async (t) => {
  const budget = createBodyBudget(1024 * KIB)
  const stream = await feed(Array.from({ length: 5_000 }, () => Buffer.from(' ')), false)
  const reading = readBodyInto(stream, 8_000, 8 * KIB, budget.hold())
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(budget.usedBytes, 8_000, '5 000 one-byte chunks are held in one buffer of the declared length (under 16 KiB)')
  stream.destroy()
  await t.rejects(reading, 'an aborted body fails')
  t.equal(budget.usedBytes, 0, 'and gives its share back')
})

t.test('error: over the limit, at once by Content-Length, at the crossing chunk otherwise', async (t) => {
  const budget = createBodyBudget(1024 * KIB)
  await t.rejects(readBodyInto(await feed([], false), 10 * KIB, 8 * KIB, budget.hold()), { code: 'body_too_large', statusCode: 413 })
  const stream = await feed([Buffer.alloc(6 * KIB), Buffer.alloc(6 * KIB)], false)
  await t.rejects(readBodyInto(stream, undefined, 8 * KIB, budget.hold()), { code: 'body_too_large', message: 'The request body exceeds 8192 bytes.' })
  t.ok(stream.isPaused(), 'the rest is not read')
  t.equal(budget.usedBytes, 0, 'nothing stays charged')
})

t.test('error: a body the budget cannot hold is refused with 503, and the others keep theirs', async (t) => {
  const budget = createBodyBudget(100 * KIB)
  const first = budget.hold()
  const held = await readBodyInto(await feed([Buffer.alloc(90 * KIB)]), 90 * KIB, 1024 * KIB, first)
  t.equal(held.length, 90 * KIB)
  await t.rejects(readBodyInto(await feed([Buffer.alloc(20 * KIB)], false), undefined, 1024 * KIB, budget.hold()),
    { code: 'bodies_at_capacity', statusCode: 503, headers: { 'retry-after': '1' } })
  t.equal(budget.usedBytes, 90 * KIB, 'the refused body gave back what it had')
  first.release()
  const again = budget.hold()
  t.equal((await readBodyInto(await feed([Buffer.alloc(20 * KIB)]), undefined, 1024 * KIB, again)).length, 20 * KIB, 'room again once released')
  again.release()
})

t.test('error: a body shorter than its Content-Length is refused', async (t) => {
  const budget = createBodyBudget(1024 * KIB)
  await t.rejects(readBodyInto(await feed([Buffer.from('{}')]), 10, 1024, budget.hold()), { code: 'validation_failed' })
  t.equal(budget.usedBytes, 0)
})

t.test('budget: a holding grows only within the capacity, and releases once', async (t) => {
  const budget = createBodyBudget(10)
  const a = budget.hold()
  const b = budget.hold()
  t.ok(a.grow(6))
  t.notOk(b.grow(5), 'over the capacity')
  t.ok(b.grow(4))
  t.equal(budget.usedBytes, 10)
  a.release()
  a.release()
  t.equal(budget.usedBytes, 4, 'a second release gives nothing back twice')
  t.notOk(a.grow(1), 'a released holding takes nothing more')
  t.throws(() => createBodyBudget(0), RangeError)
})
