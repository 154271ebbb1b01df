import t from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { pathToFileURL } from 'node:url'
import { builtEntry } from '../helpers/process.js'
import { pollUntil } from '../helpers/gateway-auth.js'
import { nodeCommand } from '../helpers/node-command.js'

/**
 * stdout log lines are batched, yet a quiet process's line still arrives on its own,
 * and nothing logged before an exit is lost. Run in a child process: the destination
 * is the real stdout (fd 1), a pipe here as under any process manager.
 */

function runLogger (script: string): { output: () => string, exited: Promise<[number | null]> } {
  const destination = pathToFileURL(builtEntry('dist/common/log-destination.js')).href
  const source = `import { pino } from 'pino'\nimport { stdoutLogDestination } from '${destination}'\nconst log = pino(stdoutLogDestination())\n${script}`
  const child = spawn(...nodeCommand(['--input-type=module', '-e', source]), { stdio: ['ignore', 'pipe', 'inherit'] })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  t.teardown(() => { child.kill('SIGKILL') })
  return { output: () => output, exited: once(child, 'exit') as Promise<[number | null]> }
}

t.test('a single line is written without waiting for a batch to fill', async (t) => {
  const child = runLogger("log.info('alone')\nsetTimeout(() => {}, 30_000)")
  await pollUntil(async () => child.output().includes('"msg":"alone"'), { timeoutMs: 10_000 })
  t.match(child.output(), '"msg":"alone"', 'the line arrives while the process keeps running')
})

t.test('lines logged just before an exit are written', async (t) => {
  const child = runLogger("for (let i = 0; i < 100; i++) log.info({ i }, 'line')\nlog.info('last')\nprocess.exit(0)")
  const [code] = await child.exited
  t.equal(code, 0, 'the process exits normally')
  const lines = child.output().trim().split('\n')
  t.equal(lines.length, 101, 'every line is there')
  t.match(lines.at(-1), '"msg":"last"', 'in order, the last one last')
})
