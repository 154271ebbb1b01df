import t from 'tap'
import { assertJson, assertProblem } from '../helpers/assert.js'
import { fleetQueries, keyFleet, queryString } from '../helpers/key-hygiene.js'
import { makeOperator } from '../helpers/operators.js'

/**
 * Key hygiene queries on GET /admin/keys: owner, status (rotating: a retired secret still
 * in grace), expiring within N days, idle for N days (never used: created longer ago),
 * never expires; every filter given must hold. One fleet of keys answers them all.
 */

t.test('each filter and their combinations select exactly the keys they describe', async (t) => {
  const { s, owners, nameOf } = await keyFleet(t)
  for (const { query, expected } of fleetQueries(owners)) {
    const path = `/admin/keys?${queryString(query)}`
    const answer = await s.admin('GET', path)
    assertJson(t, answer, 200, path)
    t.same(answer.body.api_keys.map((k: { id: string }) => nameOf(k.id)).sort(), expected, `${path}: ${expected.join(', ') || 'none'}`)
  }

  const rotating = await s.admin('GET', '/admin/keys?status=rotating')
  t.match(rotating.body.api_keys, [{ status: 'active', rotation: { grace_until: String } }], 'a rotating key shows its rotation')
  const operator = await makeOperator(t, s, ['admin:keys'])
  const asOperator = await operator.call('GET', `/admin/keys?owner=${owners.b}&status=disabled`)
  assertJson(t, asOperator, 200, 'an admin:keys operator filters too')
  t.same(asOperator.body.api_keys.map((k: { id: string }) => nameOf(k.id)), ['B2'])
})

t.test('bad filters are a 400 naming them', async (t) => {
  const { s } = await keyFleet(t)
  for (const [query, named] of [
    ['status=lost', /status/],
    ['expiring_within_days=0', /expiring_within_days/],
    ['expiring_within_days=7d', /expiring_within_days/],
    ['idle_days=-1', /idle_days/],
    ['never_expires=maybe', /never_expires/],
    ['owner=usr-1', /owner/],
    ['frobnicate=1', /frobnicate/]
  ] as const) {
    const answer = await s.admin('GET', `/admin/keys?${query}`)
    assertProblem(t, answer, 400, 'validation_failed', query)
    t.match(answer.body.detail, named, `${query}: names the filter`)
  }
})
