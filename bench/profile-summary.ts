import { readFileSync } from 'node:fs'

/**
 * Summarises a V8 `.cpuprofile` (node --cpu-prof, or `npm run bench -- --cpu-prof
 * <dir>`): the functions with the most self time, and the files they are in. Enough
 * to see where a gateway request goes without opening DevTools.
 *
 *   node dist-bench/bench/profile-summary.js <file.cpuprofile> [top=30]
 */

interface ProfileNode { id: number, callFrame: { functionName: string, url: string, lineNumber: number }, children?: number[] }
interface Profile { nodes: ProfileNode[], samples: number[], timeDeltas: number[] }

const [file, topArg] = process.argv.slice(2)
if (file === undefined) {
  process.stderr.write('usage: node dist-bench/bench/profile-summary.js <file.cpuprofile> [top]\n')
  process.exit(64)
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
const byId = new Map(profile.nodes.map((node) => [node.id, node]))
const selfMicros = new Map<number, number>()
profile.samples.forEach((id, i) => { selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)) })
const total = [...selfMicros.values()].reduce((a, b) => a + b, 0)

const shortUrl = (url: string): string => url.replace(/^file:\/\/.*?\/(node_modules|dist)\//, '$1/').replace(/^node:/, 'node:')
const byFunction = new Map<string, number>()
const byFile = new Map<string, number>()
for (const [id, micros] of selfMicros) {
  const frame = byId.get(id)?.callFrame
  if (frame === undefined) continue
  const where = frame.url === '' ? '(native)' : shortUrl(frame.url)
  const name = `${frame.functionName === '' ? '(anonymous)' : frame.functionName}  ${where}:${frame.lineNumber + 1}`
  byFunction.set(name, (byFunction.get(name) ?? 0) + micros)
  const module = where.startsWith('node_modules/') ? where.split('/').slice(0, where.split('/')[1]?.startsWith('@') === true ? 3 : 2).join('/') : where
  byFile.set(module, (byFile.get(module) ?? 0) + micros)
}
const top = Number(topArg ?? 30)
const print = (title: string, rows: Map<string, number>): void => {
  process.stdout.write(`\n${title}\n`)
  for (const [name, micros] of [...rows].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`${(100 * micros / total).toFixed(1).padStart(5)} %  ${name}\n`)
  }
}
process.stdout.write(`${file}: ${(total / 1e6).toFixed(1)} s sampled\n`)
print('self time by function', byFunction)
print('self time by module', byFile)
