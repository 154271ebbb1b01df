import t from 'tap'
import { readFileSync } from 'node:fs'
import { startGateway, startStack } from '../helpers/gateway.js'
import { http } from '../helpers/http.js'
import { repoPath } from '../helpers/repo-root.js'
import { rate, upstreamsWithPolicies } from '../helpers/traffic.js'
import { metricNames, missingFrom } from './promql-names.js'

/**
 * deploy/grafana/portier-gateway.json reads only series a running Portier serves: every
 * metric name in its PromQL (panels and variables) is looked for in a live scrape of a
 * gateway and of identity after some traffic. A renamed or removed metric fails here,
 * not on someone's empty panel.
 */
const DASHBOARD = 'deploy/grafana/portier-gateway.json'

interface Panel { title?: string, targets?: Array<{ expr?: string }>, panels?: Panel[] }
interface Dashboard { panels: Panel[], templating: { list: Array<{ name: string, query?: string | { query?: string } }> } }

/** Every PromQL expression of the dashboard, with where it is. */
function expressions (dashboard: Dashboard): Array<[string, string]> {
  const out: Array<[string, string]> = []
  const walk = (panels: Panel[]): void => {
    for (const panel of panels) {
      for (const target of panel.targets ?? []) if (target.expr !== undefined) out.push([`panel "${panel.title ?? '?'}"`, target.expr])
      walk(panel.panels ?? [])
    }
  }
  walk(dashboard.panels)
  for (const variable of dashboard.templating.list) {
    const query = typeof variable.query === 'string' ? variable.query : variable.query?.query
    if (query !== undefined && query.includes('(')) out.push([`variable $${variable.name}`, query])
  }
  return out
}

t.test('metric names are read out of PromQL', async (t) => {
  t.same(metricNames('histogram_quantile(0.95, sum by (le, route) (rate(a_seconds_bucket{job=~"$gateway", x="rate(b)"}[$__rate_interval])))'),
    ['a_seconds_bucket'], 'functions, grouping labels, matchers (and strings in them), ranges and variables are not metrics')
  t.same(metricNames('sum(rate(x_total{tier="l1"}[5m])) / sum without (instance) (rate(y_total[5m])) > bool 0.5'), ['x_total', 'y_total'], 'both sides of a binary operator')
  t.same(metricNames('label_values(portier_build_info{service="gateway"}, job)'), ['portier_build_info'], 'a variable query reads its metric, not its label')
  t.same(metricNames('up'), ['up'], 'a bare selector')
  const text = '# TYPE h histogram\nh_bucket{le="1"} 1\nh_count 1\n# TYPE c_count counter\nc_count 3\n# TYPE d counter\nd_total 1\n'
  t.equal(missingFrom(text, 'h_bucket'), null, 'a histogram\'s buckets')
  t.equal(missingFrom(text, 'c_count'), null, 'a counter named *_count')
  t.match(missingFrom(text, 'h_sum'), /no sample/, 'a series not served')
  t.match(missingFrom('# TYPE e counter\ne_count 1\n', 'e_count'), /read as a histogram series, but e is counter/, 'a suffix on what is not a histogram')
})

t.test('every metric the dashboard reads is served by a running gateway and identity', async (t) => {
  const dashboard = JSON.parse(readFileSync(repoPath(DASHBOARD), 'utf8')) as Dashboard
  const exprs = expressions(dashboard)
  t.ok(exprs.length >= 15, `${exprs.length} expressions read`)

  const stack = await startStack(t)
  // A traffic policy, so that traffic decisions are counted too.
  const gateway = await startGateway(t, { ...stack.gatewaySetup, upstreams: upstreamsWithPolicies(stack.upstreamUrl, { upstream: [rate('backoffice', 1000, 60)] }) })
  const key = await stack.createKey(['users:list'])
  for (let i = 0; i < 3; i++) t.equal((await gateway.call('/users?per_page=1', { headers: { 'x-api-key': key.key } })).status, 200, 'a keyed request')
  t.equal((await gateway.call('/users?per_page=1')).status, 401, 'a request without a credential')
  t.equal((await gateway.call('/nowhere')).status, 404, 'an unmatched request')

  const gatewayText = (await http(`${gateway.metricsUrl}/metrics`)).text
  const identityText = (await http(`${stack.adminUrl}/metrics`, { bearer: stack.serviceToken })).text
  const served = `${gatewayText}\n${identityText}`
  for (const [where, expr] of exprs) {
    for (const name of metricNames(expr)) t.equal(missingFrom(served, name), null, `${where}: ${name}`)
  }
  // The panels that say which service is which read these from both.
  for (const [service, text] of [['gateway', gatewayText], ['identity', identityText]]) {
    t.match(text, new RegExp(`^portier_build_info\\{[^}]*service="${service}"\\} 1$`, 'm'), `${service}: build info`)
    t.match(text, /^process_cpu_seconds_total \d/m, `${service}: process metrics by their standard names`)
  }
})
