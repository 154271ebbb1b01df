import t from 'tap'
import { stringify } from 'yaml'
import { parseUpstreams } from '../../../gateway/routing/index.js'
import { configProblems } from '../../helpers/config-problems.js'

/** Traffic policies in the upstreams file: checked when the file loads, every problem named with its place. */

const FILE = 'gateway.yaml'
const rate = { name: 'burst', kind: 'rate', limit: 10, window_seconds: 60, partition: 'key' }

function documentWith (upstreamPolicies: unknown, route: Record<string, unknown>): unknown {
  return {
    upstreams: [{
      name: 'backoffice',
      target: 'http://127.0.0.1:4000',
      ...(upstreamPolicies !== undefined ? { policies: upstreamPolicies } : {}),
      routes: [{ method: 'GET', path: '/users', permission: 'users:list', ...route }]
    }]
  }
}

const problemsOf = (doc: unknown): string[] => configProblems(() => parseUpstreams(stringify(doc), FILE, 'yaml'))

t.test('valid policies load, with their defaults', async (t) => {
  const { config } = parseUpstreams(stringify(documentWith([rate, { name: 'pool', kind: 'concurrency', limit: 4, partition: 'upstream' }],
    { cost: 5, policies: [{ name: 'daily', kind: 'quota', limit: 1000, period: 'day', partition: 'user' }] })), FILE, 'yaml')
  const [upstream] = config.upstreams
  t.same(upstream?.policies?.map((p) => p.name), ['burst', 'pool'])
  t.same(upstream?.routes[0]?.policies?.map((p) => p.name), ['daily'])
  t.equal(upstream?.routes[0]?.cost, 5)
})

const cases: Array<[string, unknown, Record<string, unknown>, RegExp]> = [
  ['an unknown kind', [{ ...rate, kind: 'bucket' }], {}, /upstreams\[0\]\.policies\[0\]/],
  ['a rate limit of 0', [{ ...rate, limit: 0 }], {}, /upstreams\[0\]\.policies\[0\]/],
  ['a rate limit above 100 000', [{ ...rate, limit: 100_001 }], {}, /upstreams\[0\]\.policies\[0\]/],
  ['a window of 0 s', [{ ...rate, window_seconds: 0 }], {}, /upstreams\[0\]\.policies\[0\]/],
  ['an unknown partition', [{ ...rate, partition: 'tenant' }], {}, /upstreams\[0\]\.policies\[0\]/],
  ['an unknown member', [{ ...rate, burst: 4 }], {}, /upstreams\[0\]\.policies\[0\]/],
  ['a name with capitals', [{ ...rate, name: 'Burst' }], {}, /upstreams\[0\]\.policies\[0\]/],
  ['a quota with a window instead of a period', [{ name: 'q', kind: 'quota', limit: 5, window_seconds: 60, partition: 'key' }], {}, /upstreams\[0\]\.policies\[0\]/],
  ['two policies of one name', [rate, { ...rate, limit: 20 }], {}, /upstreams\[0\]\.policies\/1\/name: "burst" is declared twice/],
  ['two policies of one name on a route', undefined, { policies: [rate, { ...rate }] }, /upstreams\[0\]\.routes\[0\]\.policies\/1\/name: "burst" is declared twice/],
  ['a cost of 0', undefined, { cost: 0 }, /upstreams\[0\]\.routes\[0\]\.cost/],
  ['a cost above every request\'s reach', [rate], { cost: 11 }, /upstreams\[0\]\.routes\[0\]\.cost: 11 is more than the limit 10 of policy "burst", so no request could pass/],
  ['more than 8 policies', Array.from({ length: 9 }, (_, i) => ({ ...rate, name: `p${i}` })), {}, /upstreams\[0\]\.policies/]
]

for (const [label, upstreamPolicies, route, expected] of cases) {
  t.test(`refused: ${label}`, async (t) => {
    const problems = problemsOf(documentWith(upstreamPolicies, route))
    t.ok(problems.length > 0, 'the file is refused')
    t.ok(problems.some((line) => line.startsWith(`${FILE}: `) && expected.test(line)), `a problem names the place: ${problems.join(' | ')}`)
  })
}
