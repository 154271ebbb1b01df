import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { promisify } from 'node:util'

const run = promisify(execFile)

/**
 * The optional programs the bench uses when it can (nginx as a reference, wrk as the
 * load generator): found on PATH or in the usual places, or installed from Debian's
 * packages when allowed and possible. Without them the bench still runs, and says so.
 */
export interface ToolSpec {
  /** Command name, e.g. `nginx`. */
  name: string
  /** Debian package that provides it. */
  aptPackage: string
  /** Where to look when it is not on PATH (Debian puts nginx in /usr/sbin, which not every PATH has). */
  candidates: string[]
  /** The flag that refuses the install, for the message. */
  refuseFlag: string
}

async function onPath (name: string): Promise<string | null> {
  try {
    const { stdout } = await run('sh', ['-c', `command -v ${name}`])
    return stdout.trim() === '' ? null : stdout.trim()
  } catch {
    return null
  }
}

export async function findTool (spec: ToolSpec): Promise<string | null> {
  return await onPath(spec.name) ?? spec.candidates.find((path) => existsSync(path)) ?? null
}

/** The binary, or why there is none (the bench prints it and runs without the tool). */
export async function findOrInstallTool (spec: ToolSpec, install: boolean, say: (line: string) => void): Promise<{ binary: string } | { absent: string }> {
  const found = await findTool(spec)
  if (found !== null) return { binary: found }
  if (!install) return { absent: `${spec.name} is not installed and ${spec.refuseFlag} was given` }
  const canInstall = process.getuid?.() === 0 && existsSync('/usr/bin/apt-get')
  if (!canInstall) return { absent: `${spec.name} is not installed and cannot be installed here (apt-get as root)` }
  say(`${spec.name} is absent: installing Debian's ${spec.aptPackage} with apt-get (${spec.refuseFlag} skips this)`)
  try {
    await run('apt-get', ['install', '-y', '--no-install-recommends', spec.aptPackage], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, maxBuffer: 16 * 1024 * 1024 })
  } catch (err) {
    return { absent: `${spec.name} could not be installed (${(err as Error).message.split('\n')[0] ?? 'apt-get failed'})` }
  }
  const installed = await findTool(spec)
  return installed !== null ? { binary: installed } : { absent: `apt-get installed ${spec.aptPackage}, but no ${spec.name} binary was found` }
}
