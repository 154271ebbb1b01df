/**
 * How a test starts a Node process. tap's process tracker rides along in every child
 * it sees spawned, through NODE_OPTIONS: a loader hook on every import and about a
 * second of CPU per process, which only coverage needs. Unless tap collects coverage
 * (`npm run coverage`), the child starts through `env -u NODE_OPTIONS`, exactly as a
 * server or the CLI starts outside the tests.
 */
export function nodeCommand (args: readonly string[]): [string, string[]] {
  const coverage = (process.env.TAP_DISABLE_COVERAGE ?? '0') === '0'
  return coverage ? [process.execPath, [...args]] : ['env', ['-u', 'NODE_OPTIONS', process.execPath, ...args]]
}
