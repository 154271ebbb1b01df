import t from 'tap'
import { Histogram, Registry } from 'prom-client'
import { createHotHistogram } from '../../gateway/observability/hot-histogram.js'
import { seededRandom } from '../helpers/seeded-random.js'

/**
 * A hot histogram exposes exactly what prom-client's own histogram does for the same
 * observations: the same lines, buckets, sums and counts, per series.
 */
t.test('the same exposition as prom-client\'s histogram', async (t) => {
  const buckets = [0.001, 0.01, 0.1, 1, 10]
  const ours = new Registry()
  const theirs = new Registry()
  const hot = createHotHistogram({ name: 'h_seconds', help: 'A histogram.', labelNames: ['upstream', 'status_class'] as const, buckets, registry: ours })
  const reference = new Histogram({ name: 'h_seconds', help: 'A histogram.', labelNames: ['upstream', 'status_class'] as const, buckets, registers: [theirs] })
  const random = seededRandom(5)
  const labelSets = [{ upstream: 'a', status_class: '2xx' }, { upstream: 'b', status_class: '5xx' }, { upstream: 'a', status_class: '4xx' }]
  for (let i = 0; i < 500; i++) {
    const labels = labelSets[i % labelSets.length] ?? { upstream: 'a', status_class: '2xx' }
    // Bounds themselves, values between them and past the largest.
    const value = i % 7 === 0 ? (buckets[i % buckets.length] ?? 1) : random() * 20
    hot.series(labels).observe(value)
    reference.observe(labels, value)
  }
  t.equal(await ours.metrics(), await theirs.metrics(), 'the same text, line for line')
  t.same((await ours.getMetricsAsJSON()).map((m) => m.name), ['h_seconds'])
})
