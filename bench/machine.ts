import { execFile } from 'node:child_process'
import { cpus, release, totalmem, type } from 'node:os'
import { promisify } from 'node:util'
import type { MachineInfo } from './report/types.js'

const run = promisify(execFile)

async function redisVersion (): Promise<string> {
  try {
    const { stdout } = await run('redis-server', ['--version'])
    return /v=(\S+)/.exec(stdout)?.[1] ?? stdout.trim()
  } catch {
    return 'unknown'
  }
}

/** What the numbers were measured on: they mean little without it. */
export async function describeMachine (nginx: string | null): Promise<MachineInfo> {
  const cores = cpus()
  return {
    cpuModel: cores[0]?.model.trim() ?? 'unknown',
    cores: cores.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    os: `${type()} ${release()}`,
    node: process.version,
    redis: await redisVersion(),
    nginx
  }
}
