import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'yaml'
import { repoPath } from './repo-root.js'

/** The upstreams file the gateway ships with (it fronts the mock on 127.0.0.1:4000). */
export const DEFAULT_UPSTREAMS_FILE = repoPath('gateway/upstreams.default.yaml')

/**
 * Writes the shipped upstreams file into `dir` with its target pointed at `mockUrl`,
 * as text: suites that run the gateway as a process need no gateway code to make one.
 */
export function writeMockUpstreamsFile (dir: string, mockUrl: string, name = 'upstreams.yaml'): string {
  const file = join(dir, name)
  writeFileSync(file, readFileSync(DEFAULT_UPSTREAMS_FILE, 'utf8').replaceAll('http://127.0.0.1:4000', mockUrl))
  return file
}

/**
 * The shipped upstreams file's content with its targets pointed at `mockUrl`, as the
 * file says it (defaults not filled in: the gateway that loads it fills them), for
 * suites that write a file of their own around it.
 */
export function mockUpstreamsContent (mockUrl: string): { upstreams: Array<Record<string, unknown>> } {
  const content = parse(readFileSync(DEFAULT_UPSTREAMS_FILE, 'utf8')) as { upstreams: Array<Record<string, unknown>> }
  return { upstreams: content.upstreams.map((upstream) => ({ ...upstream, target: mockUrl })) }
}
