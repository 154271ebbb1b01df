import { request } from 'undici'

/** One sample of a Prometheus text exposition: `name{a="b",…} value`. */
interface Sample { name: string, labels: Record<string, string>, value: number }

export function parsePrometheusText (text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line)
    if (match === null) continue
    const labels: Record<string, string> = {}
    for (const [, key, value] of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[key as string] = value as string
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) })
  }
  return samples
}

/** The sum of every sample of `name` whose labels include `labels`. */
export function sumOf (samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0)
}

export async function scrape (url: string, token?: string): Promise<Sample[]> {
  const response = await request(url, { headers: token !== undefined ? { authorization: `Bearer ${token}` } : {} })
  const text = await response.body.text()
  if (response.statusCode !== 200) throw new Error(`${url} answered ${response.statusCode}`)
  return parsePrometheusText(text)
}
