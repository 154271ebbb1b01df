import { PassThrough, Readable } from 'node:stream'
import { runPortier } from '../../cli/program.js'

export interface CliRun { code: number, stdout: string, stderr: string }

function capture (): { stream: PassThrough, text: () => string } {
  const stream = new PassThrough()
  let text = ''
  stream.on('data', (chunk: Buffer) => { text += chunk.toString() })
  return { stream, text: () => text }
}

/** Runs one `portier` command line in this process with captured streams and exactly `env`. */
export async function runPortierHere (args: string[], env: Record<string, string> = {}, input?: string): Promise<CliRun> {
  const stdout = capture()
  const stderr = capture()
  const code = await runPortier(args, { stdin: Readable.from(input !== undefined ? [input] : []), stdout: stdout.stream, stderr: stderr.stream, env })
  return { code, stdout: stdout.text(), stderr: stderr.text() }
}
