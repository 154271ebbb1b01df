import t from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { cpuSecondsOf, memoryOf, processTree, treeCpuSecondsOf } from '../../bench/processes/proc-stats.js'
import { nodeCommand } from '../helpers/node-command.js'

/**
 * CPU and memory are read for a process and its descendants: a parent that forks a
 * worker burning CPU (as nginx's master and a clustered gateway do) is charged for
 * the worker's CPU, while the worker runs and after it has exited and been reaped.
 */

// The worker burns half a second of its own CPU, says so, and exits when told.
const WORKER = `
const start = process.cpuUsage()
while (true) { const u = process.cpuUsage(start); if (u.user + u.system >= 500000) break }
process.stdout.write('burned\\n')
process.stdin.once('data', () => process.exit(0))
`
// The parent forks it, passes its lines on, and reports its exit (once reaped).
const PARENT = `
const { spawn } = require('node:child_process')
const worker = spawn(process.execPath, ['-e', ${JSON.stringify(WORKER)}], { stdio: ['pipe', 'pipe', 'inherit'] })
process.stdout.write('worker ' + worker.pid + '\\n')
worker.stdout.on('data', (d) => process.stdout.write(d))
process.stdin.on('data', () => worker.stdin.write('stop\\n'))
worker.on('exit', () => process.stdout.write('reaped\\n'))
setInterval(() => {}, 1000)
`

t.test('a process tree is charged for its descendants\' CPU, live and reaped', async (t) => {
  const parent = spawn(...nodeCommand(['-e', PARENT]), { stdio: ['pipe', 'pipe', 'inherit'] })
  t.teardown(() => { parent.kill('SIGKILL') })
  let output = ''
  parent.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const seen = async (pattern: RegExp): Promise<RegExpExecArray> => {
    while (pattern.exec(output) === null) await once(parent.stdout, 'data')
    return pattern.exec(output) as RegExpExecArray
  }
  const workerPid = Number((await seen(/worker (\d+)/))[1])
  await seen(/burned/)
  // nodeCommand may start node through `env`, which execs it: the pid stays the same
  const root = parent.pid as number
  t.ok(processTree(root).includes(workerPid), 'the tree holds the worker')
  const workerCpu = cpuSecondsOf(workerPid)
  t.ok(workerCpu >= 0.45, `the worker used its half second (${workerCpu} s)`)
  t.ok(treeCpuSecondsOf(root) >= cpuSecondsOf(root) + workerCpu - 0.011, 'the tree\'s CPU counts the live worker')
  t.ok(memoryOf(root).rssMiB > 0, 'the tree has a resident size')

  parent.stdin.write('stop\n')
  await seen(/reaped/)
  t.notOk(processTree(root).includes(workerPid), 'the exited worker has left the tree')
  t.ok(treeCpuSecondsOf(root) >= workerCpu, 'its CPU is still counted, through its parent\'s reaped-children time')
})
