import { readFileSync } from 'node:fs'
import { extname } from 'node:path'
import { ConfigError } from '../../common/config.js'
import { deepFreeze } from '../../common/deep-freeze.js'
import { parseConfigText, type ConfigFormat } from './parse-text.js'
import { HTTP_METHODS, type UpstreamsFileContent } from './schema.js'
import { checkSchema } from './schema-problems.js'
import { checkSemantics } from './semantic-checks.js'
import type { LoadedUpstreams, LoadOptions, UpstreamConfig, UpstreamCorsConfig, UpstreamsConfig } from './types.js'

type FileUpstream = UpstreamsFileContent['upstreams'][number]

/** The cors block with its methods filled in: unless listed, every method the upstream's routes declare, and HEAD wherever GET is. */
function corsConfigOf (cors: NonNullable<FileUpstream['cors']>, routes: FileUpstream['routes']): UpstreamCorsConfig {
  const declared = new Set(routes.map((r) => r.method))
  if (declared.has('GET')) declared.add('HEAD')
  return {
    origins: [...cors.origins],
    methods: cors.methods !== undefined ? [...new Set(cors.methods)] : HTTP_METHODS.filter((m) => declared.has(m)),
    headers: [...new Set(cors.headers.map((h) => h.toLowerCase()))],
    ...(cors.expose_headers !== undefined ? { expose_headers: [...new Set(cors.expose_headers.map((h) => h.toLowerCase()))] } : {}),
    credentials: cors.credentials,
    max_age: cors.max_age
  }
}

const FORMATS_BY_EXTENSION: ReadonlyMap<string, ConfigFormat> = new Map([['.yaml', 'yaml'], ['.yml', 'yaml'], ['.json', 'json']])

/** A fresh copy in the public shape (null for an absent permission), so nothing of the parser's objects leaks. */
function toConfig (content: UpstreamsFileContent): UpstreamsConfig {
  return deepFreeze({
    upstreams: content.upstreams.map((u): UpstreamConfig => ({
      name: u.name,
      target: u.target,
      prefix: u.prefix,
      keyCase: u.keyCase,
      timeouts: { connectMs: u.timeouts.connectMs, responseMs: u.timeouts.responseMs },
      ...(u.bodyLimitBytes !== undefined ? { bodyLimitBytes: u.bodyLimitBytes } : {}),
      connections: u.connections,
      fairShare: u.fairShare,
      aliases: Object.fromEntries(Object.entries(u.aliases)),
      routes: u.routes.map((r) => ({
        method: r.method,
        path: r.path,
        permission: r.permission ?? null,
        ...(r.policies !== undefined ? { policies: r.policies } : {}),
        ...(r.cost !== undefined ? { cost: r.cost } : {}),
        ...(r.websocket === true ? { websocket: true } : {})
      })),
      ...(u.policies !== undefined ? { policies: u.policies } : {}),
      ...(u.cors !== undefined ? { cors: corsConfigOf(u.cors, u.routes) } : {})
    }))
  })
}

/**
 * Parses and checks an upstreams document. Every problem found is thrown at once in a
 * ConfigError (source = `source`), each line naming the source, the place in the
 * document and what is wrong. A route without a permission is a warning, or a problem
 * with `strict`. The returned config has every default applied and is deeply frozen.
 */
export function parseUpstreams (text: string, source: string, format: ConfigFormat, options: LoadOptions = {}): LoadedUpstreams {
  const parsed = parseConfigText(text, source, format)
  if (!parsed.ok) throw new ConfigError(source, parsed.problems)
  const checked = checkSchema(parsed.value, source)
  if (!checked.ok) throw new ConfigError(source, checked.problems)
  const findings = checkSemantics(checked.value)
  const located = (lines: string[]): string[] => lines.map((line) => `${source}: ${line}`)
  const problems = located(findings.problems)
  const warnings = located(findings.undeclaredPermissions)
  if (options.strict === true) problems.push(...warnings.splice(0))
  if (problems.length > 0) throw new ConfigError(source, problems)
  return { config: toConfig(checked.value), warnings }
}

/**
 * Reads an upstreams file synchronously: `.yaml`/`.yml` as YAML, `.json` as JSON.
 * Throws a ConfigError (source = `file`) when it cannot be read or is not valid.
 */
export function loadUpstreamsFile (file: string, options: LoadOptions = {}): LoadedUpstreams {
  const format = FORMATS_BY_EXTENSION.get(extname(file).toLowerCase())
  if (format === undefined) {
    throw new ConfigError(file, [`${file}: unknown file type: the upstreams file must end in ${[...FORMATS_BY_EXTENSION.keys()].join(', ')}`])
  }
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : code === 'EACCES' ? 'permission denied' : (err as Error).message
    throw new ConfigError(file, [`${file}: cannot be read: ${reason}`])
  }
  return parseUpstreams(text, file, format, options)
}
