import t from 'tap'
import { assertJson, assertProblem } from '../helpers/assert.js'
import { startStack } from '../helpers/gateway.js'

/**
 * The caps on inflection work per body, through the gateway on real listeners:
 * a request body with more object members than maxInflectedRequestMembers is a 400
 * body_too_wide before any upstream sees it (whatever the route, the depth or how the
 * members are spread); an upstream body with more than maxInflectedResponseMembers is
 * a 502 upstream_body_not_inflectable. Without x-api-inflection nothing is counted.
 */

const wide = (count: number): Record<string, number> => Object.fromEntries(Array.from({ length: count }, (_, i) => [`a_b${i}`, i]))

t.test('inflection caps through the gateway', async (t) => {
  const stack = await startStack(t)
  const key = await stack.createKey(['debug:write', 'users:list'])
  const gateway = await stack.addGateway({ maxInflectedRequestMembers: 100, maxInflectedResponseMembers: 200 })
  const headers = { 'x-api-key': key.key, 'x-api-inflection': 'camel' }

  await t.test('request bodies: 400 body_too_wide over the cap, before any upstream', async (t) => {
    const cases: Array<[string, string, unknown]> = [
      ['101 members in one object', '/echo', wide(101)],
      ['101 members spread over 101 objects in a list', '/echo', Array.from({ length: 101 }, (_, i) => ({ [`a_b${i}`]: i }))],
      ['101 members nested 101 deep', '/echo', JSON.parse(`${'{"a_b":'.repeat(101)}1${'}'.repeat(101)}`)],
      ['101 members, the same name in 101 objects', '/echo', Array.from({ length: 101 }, () => ({ first_name: 'x' }))],
      ['an anonymous login with 101 members', '/sessions', { session: { email: 'a@example.com', password: 'x' }, ...wide(98) }]
    ]
    for (const [label, path, body] of cases) {
      const answer = await gateway.call(path, { headers: path === '/sessions' ? { 'x-api-inflection': 'camel' } : headers, body })
      assertProblem(t, answer, 400, 'body_too_wide', label)
      t.equal(answer.body.detail, 'The JSON body has more than 100 object members and cannot be inflected.', `${label}: detail`)
    }
    const echoed = await gateway.call('/echo', { headers, body: wide(100) })
    assertJson(t, echoed, 200, '100 members: at the cap, inflected and forwarded')
    t.same(echoed.body.body, Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`aB${i}`, i])), 'and converted both ways')
    assertJson(t, await gateway.call('/echo', { headers: { 'x-api-key': key.key }, body: wide(101) }), 200, 'without x-api-inflection the body is not counted')
  })

  await t.test('upstream bodies: 502 upstream_body_not_inflectable over the cap', async (t) => {
    const big = await gateway.call('/users?per_page=50', { headers })
    assertProblem(t, big, 502, 'upstream_body_not_inflectable', '50 users inflected')
    t.equal(big.body.detail, 'The upstream answered JSON that cannot be inflected: it has more than 200 object members.')
    assertJson(t, await gateway.call('/users?per_page=50', { headers: { 'x-api-key': key.key } }), 200, 'the same page without inflection passes unchanged')
    assertJson(t, await gateway.call('/users?per_page=2', { headers }), 200, 'a smaller page is inflected')
  })

  await t.test('the defaults leave ordinary bodies alone', async (t) => {
    assertJson(t, await stack.gateway.call('/users?per_page=500', { headers }), 200, 'the largest users page, inflected')
    assertJson(t, await stack.gateway.call('/echo', { headers, body: Array.from({ length: 1_000 }, (_, i) => ({ id: i, first_name: 'a', last_name: 'b', e_mail: 'c' })) }), 200,
      'a batch of 1 000 records of 4 members')
  })
})
