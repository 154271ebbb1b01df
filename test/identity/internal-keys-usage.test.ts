import t, { type Test } from 'tap'
import { randomLookupId } from '../../common/api-key-format.js'
import {
  KEY_USAGE_BODY_LIMIT_BYTES, KEY_USAGE_IP_MAX_LENGTH, KEY_USAGE_MAX_ENTRIES, KEY_USAGE_ROUTE_MAX_LENGTH, KEYS_USAGE_PATH
} from '../../common/internal-api.js'
import { randomBase62 } from '../../common/random.js'
import { assertJson, assertProblem } from '../helpers/assert.js'
import { http } from '../helpers/http.js'
import { START, iso } from '../helpers/identity.js'
import {
  keyHelpers, postKeyUsage, startWithAdmin, usageReport, type AdminSetup, type KeyHelpers
} from '../helpers/session-setup.js'

/**
 * POST /internal/keys/usage: the uses gateways counted, applied in one transaction.
 * Per secret: the count is added; the last use (time, route pattern, client address)
 * is the latest reported, whatever the order reports arrive in; the key's last use is
 * the latest of its secrets'. Unknown lookup ids are skipped, a batch id is applied
 * once, a time ahead of identity's clock is taken as now. A report is refused whole
 * (problem+json, nothing written) when any part of it breaks the contract.
 */

const HOUR_MS = 3_600_000

type Setup = AdminSetup & KeyHelpers & { key: (id: string) => Promise<Record<string, any>> }

async function setup (t: Test, env: Record<string, string> = {}): Promise<Setup> {
  const s = await startWithAdmin(t, env)
  return { ...s, ...keyHelpers(t, s), key: async (id) => (await s.admin('GET', `/admin/keys/${id}`)).body.api_key }
}

t.test('happy: counts add up per secret, and the latest use wins whatever the order', async (t) => {
  const s = await setup(t)
  const { id, key } = await s.create({ name: 'k', permissions: ['users:list'], expires_at: iso(START + 24 * HOUR_MS) })
  s.clock.advance(HOUR_MS)
  t.same(await s.reportUses([{ key, count: 40, at: START + 30 * 60_000, route: '/users', ip: '198.51.100.1' }]), { applied: 1, unknown: 0, duplicate: false })
  t.same(await s.reportUses([{ key, count: 2, at: START + 10 * 60_000, route: '/tasks/:id', ip: '198.51.100.2' }]), { applied: 1, unknown: 0, duplicate: false },
    'a report of older uses, from another gateway that was slower to send it')
  t.match(await s.key(id), {
    last_used_at: iso(START + 30 * 60_000),
    last_used_route: '/users',
    last_used_ip: '198.51.100.1',
    secrets: [{ use_count: 42, last_used_at: iso(START + 30 * 60_000), last_used_route: '/users', last_used_ip: '198.51.100.1' }]
  }, 'both counts added; the last use is the later one, with its own route and address')

  const rotated = await s.admin('POST', `/admin/keys/${id}/rotate`)
  const newKey = rotated.body.key as string
  await s.reportUses([
    { key: newKey, count: 5, at: START + 50 * 60_000, route: '/users/:id', ip: '2001:db8::7' },
    { key, count: 1, at: START + 40 * 60_000, route: null, ip: null }
  ])
  const shown = await s.key(id)
  t.match(shown, {
    last_used_at: iso(START + 50 * 60_000),
    last_used_route: '/users/:id',
    last_used_ip: '2001:db8::7',
    rotation: { old_secret_use_count: 43, old_secret_last_used_at: iso(START + 40 * 60_000) },
    secrets: [
      { state: 'current', use_count: 5, last_used_route: '/users/:id', last_used_ip: '2001:db8::7' },
      { state: 'grace', use_count: 43, last_used_route: null, last_used_ip: null }
    ]
  }, 'one report, two secrets of one key: each counted apart, the key\'s last use is the latest of theirs')
})

t.test('unknown lookup ids are skipped; the rest of the report is applied', async (t) => {
  const s = await setup(t)
  const { id, key } = await s.create({ name: 'k', permissions: [], expires_at: iso(START + HOUR_MS) })
  const stranger = `ptk_${randomLookupId()}_`
  t.same(await s.reportUses([{ key: stranger, count: 7, at: START }, { key, count: 3, at: START }]), { applied: 1, unknown: 1, duplicate: false })
  t.match(await s.key(id), { secrets: [{ use_count: 3 }] })
})

t.test('a batch id is applied once: a report sent again after a lost answer does not count twice', async (t) => {
  const s = await setup(t)
  const { id, key } = await s.create({ name: 'k', permissions: [], expires_at: iso(START + HOUR_MS) })
  const report = usageReport([{ key, count: 9, at: START }])
  assertJson(t, await postKeyUsage(s, report), 200, 'first time')
  const again = await postKeyUsage(s, report)
  assertJson(t, again, 200, 'the same batch again')
  t.same(again.body, { applied: 0, unknown: 0, duplicate: true }, 'answered as a duplicate')
  t.match(await s.key(id), { secrets: [{ use_count: 9 }] }, 'counted once')
  assertJson(t, await postKeyUsage(s, { ...report, batch_id: randomBase62(24) }), 200, 'the same uses under another batch id')
  t.match(await s.key(id), { secrets: [{ use_count: 18 }] }, 'are other uses')
})

t.test('batch ids are forgotten after a day', async (t) => {
  const s = await setup(t)
  const { id, key } = await s.create({ name: 'k', permissions: [], expires_at: iso(START + 30 * 24 * HOUR_MS) })
  const report = usageReport([{ key, at: START }])
  assertJson(t, await postKeyUsage(s, report), 200)
  const remembered = (): number => s.identity.db.prepare('SELECT count(*) FROM key_usage_batches').pluck().get() as number
  t.equal(remembered(), 1)
  s.clock.advance(24 * HOUR_MS + 1)
  await s.reportUses([{ key, at: s.clock.now() }])
  t.equal(remembered(), 1, 'the day-old id was forgotten when the next report came')
  t.match(await s.key(id), { secrets: [{ use_count: 2 }] })
})

t.test('a use reported ahead of identity\'s clock is taken as now', async (t) => {
  const s = await setup(t)
  const { id, key } = await s.create({ name: 'k', permissions: [], expires_at: iso(START + 48 * HOUR_MS) })
  s.clock.advance(1_000)
  await s.reportUses([{ key, at: START + 24 * HOUR_MS }])
  t.match(await s.key(id), { last_used_at: iso(START + 1_000), secrets: [{ last_used_at: iso(START + 1_000) }] },
    'a gateway whose clock runs ahead cannot date a use in the future (and hide the later real ones)')
})

t.test('the largest report a gateway sends fits, whatever the listener\'s own body limit', async (t) => {
  const s = await setup(t, { IDENTITY_BODY_LIMIT_BYTES: '1024' })
  const { id, key } = await s.create({ name: 'k', permissions: [], expires_at: iso(START + HOUR_MS) })
  const route = `/${'a'.repeat(KEY_USAGE_ROUTE_MAX_LENGTH - 1)}`
  const ip = 'f'.repeat(KEY_USAGE_IP_MAX_LENGTH)
  const uses = Array.from({ length: KEY_USAGE_MAX_ENTRIES }, (_, i) => ({
    key: i === 0 ? key : `ptk_${randomLookupId()}_`, count: Number.MAX_SAFE_INTEGER, at: START, route, ip
  }))
  const report = usageReport(uses, randomBase62(64))
  const bytes = Buffer.byteLength(JSON.stringify(report))
  t.ok(bytes > 1_048_576 && bytes <= KEY_USAGE_BODY_LIMIT_BYTES, `${bytes} bytes: over the default listener limit, within the route's (${KEY_USAGE_BODY_LIMIT_BYTES})`)
  const answer = await postKeyUsage(s, report)
  assertJson(t, answer, 200, 'the largest report')
  t.same(answer.body, { applied: 1, unknown: KEY_USAGE_MAX_ENTRIES - 1, duplicate: false })
  t.match(await s.key(id), { secrets: [{ use_count: Number.MAX_SAFE_INTEGER, last_used_route: route }] })
})

t.test('error: a report that breaks the contract anywhere is refused whole, and nothing is written', async (t) => {
  const s = await setup(t)
  const { id, key } = await s.create({ name: 'k', permissions: [], expires_at: iso(START + HOUR_MS) })
  const good = usageReport([{ key, count: 5, at: START }])
  const goodUse = good.uses[0] as Record<string, unknown>
  const withSecond = (use: Record<string, unknown>): unknown => ({ ...good, uses: [goodUse, { ...goodUse, ...use }] })
  const cases: Array<[string, unknown]> = [
    ['no batch_id', { uses: good.uses }],
    ['a batch_id too short', { ...good, batch_id: 'abc' }],
    ['a batch_id with a space', { ...good, batch_id: `${randomBase62(20)} x` }],
    ['no uses', { batch_id: good.batch_id }],
    ['empty uses', { ...good, uses: [] }],
    [`${KEY_USAGE_MAX_ENTRIES + 1} uses`, { ...good, uses: Array(KEY_USAGE_MAX_ENTRIES + 1).fill(goodUse) }],
    ['an unknown member', { ...good, gateway: 'g1' }],
    ['an unknown member in a use', withSecond({ secret: 'x' })],
    ['count 0', withSecond({ count: 0 })],
    ['count 1.5', withSecond({ count: 1.5 })],
    ['count as a string', withSecond({ count: '3' })],
    ['a lookup id of 11 characters', withSecond({ lookup_id: 'abcdefghijk' })],
    ['a full key as the lookup id', withSecond({ lookup_id: key })],
    ['last_used_at not a date-time', withSecond({ last_used_at: 'yesterday' })],
    ['no last_route', withSecond({ last_route: undefined })],
    ['a route not starting with /', withSecond({ last_route: 'users' })],
    ['a route with a quote', withSecond({ last_route: '/users/"x"' })],
    ['a route with a control character', withSecond({ last_route: '/users/\u001b[2J' })],
    ['a route over 2048 characters', withSecond({ last_route: `/${'a'.repeat(KEY_USAGE_ROUTE_MAX_LENGTH)}` })],
    ['an address with a space', withSecond({ last_ip: '10.0.0.1 ' })],
    ['an address over 64 characters', withSecond({ last_ip: '1'.repeat(KEY_USAGE_IP_MAX_LENGTH + 1) })]
  ]
  for (const [label, body] of cases) assertProblem(t, await postKeyUsage(s, body), 400, 'validation_failed', label)
  const padded = `${JSON.stringify(good).slice(0, -1)}${' '.repeat(KEY_USAGE_BODY_LIMIT_BYTES)}}`
  assertProblem(t, await postKeyUsage(s, padded), 413, 'body_too_large', 'over the route\'s body limit')
  assertProblem(t, await http(`${s.adminUrl}${KEYS_USAGE_PATH}`, { bearer: s.serviceToken, body: JSON.stringify(good), headers: { 'content-type': 'text/plain' } }),
    415, 'unsupported_media_type')
  t.match(await s.key(id), { last_used_at: null, last_used_route: null, secrets: [{ use_count: 0, last_used_at: null }] }, 'nothing counted')
  t.equal(s.identity.db.prepare('SELECT count(*) FROM key_usage_batches').pluck().get(), 0, 'no batch id remembered')
  assertJson(t, await postKeyUsage(s, good), 200, 'control: the good report is taken')
  t.match(await s.key(id), { secrets: [{ use_count: 5 }] })
})

t.test('error: only the service credential reports uses', async (t) => {
  const s = await setup(t)
  const { id, key } = await s.create({ name: 'k', permissions: [], expires_at: iso(START + HOUR_MS) })
  const report = usageReport([{ key, count: 5, at: START }])
  assertProblem(t, await http(`${s.adminUrl}${KEYS_USAGE_PATH}`, { body: report }), 401, 'service_unauthorized', 'no credential')
  assertProblem(t, await http(`${s.adminUrl}${KEYS_USAGE_PATH}`, { bearer: s.adminToken, body: report }), 401, 'service_unauthorized', 'the admin token')
  assertProblem(t, await http(`${s.publicUrl}${KEYS_USAGE_PATH}`, { bearer: s.serviceToken, body: report }), 404, 'not_found', 'on the public listener')
  t.match(await s.key(id), { secrets: [{ use_count: 0 }] }, 'nothing counted')
})
