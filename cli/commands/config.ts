import type { Command } from 'commander'
import type { UpstreamsConfig } from '../../gateway/routing/index.js'
import type { CliIo } from '../io.js'

const count = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`

function summary (config: UpstreamsConfig): string {
  const routes = config.upstreams.reduce((sum, u) => sum + u.routes.length, 0)
  const aliases = config.upstreams.reduce((sum, u) => sum + Object.keys(u.aliases).length, 0)
  return `${count(config.upstreams.length, 'upstream', 'upstreams')}, ${count(routes, 'route', 'routes')}, ${count(aliases, 'alias', 'aliases')}`
}

/**
 * `portier config …`: the gateway's upstreams file. `config check` needs no environment:
 * it reads only the file, so it can run in CI before a deploy.
 */
export function registerConfigCommands (program: Command, io: CliIo): void {
  const config = program.command('config').description('the gateway\'s upstreams file')

  config.command('check')
    .description('check an upstreams file (YAML or JSON) as the gateway loads it, strictly: a route without a permission is an error too. ' +
      'Prints one "ok:" line, or every problem on stderr and exits 78')
    .argument('<file>', 'the upstreams file (.yaml, .yml or .json)')
    .action(async (file: string) => {
      // Loaded here, not with the program: every other command would pay for the YAML parser and the schema compile.
      const { loadUpstreamsFile } = await import('../../gateway/routing/index.js')
      // A failure is a ConfigError: runPortier prints its lines and exits 78.
      const { config: loaded } = loadUpstreamsFile(file, { strict: true })
      io.stdout.write(`ok: ${file}: ${summary(loaded)}\n`)
    })
}
