import { watch, type FSWatcher } from 'node:fs'
import { basename, dirname, resolve } from 'node:path'
import type { FastifyBaseLogger } from 'fastify'
import { ConfigError } from '../../common/config.js'
import { loadUpstreamsFile, parseUpstreams } from './load.js'
import { buildRouteTable } from './route-table.js'
import { DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_UPSTREAM_CONNECTIONS } from './schema.js'
import type { RouteTable, UpstreamsConfig } from './types.js'

/** The pool an origin's connections get: what the upstream's config says of them. */
export interface UpstreamPoolSettings {
  /** Connect timeout of the upstream at that origin. */
  connectTimeoutMs: number
  /** Its pool of connections. */
  connections: number
}

export interface LiveRouteTableOptions {
  /** Where the upstreams come from: a file, read again on each reload, or the config itself. */
  source: { file: string } | { config: unknown }
  identityOrigin: string
  /** The console's origin, when the gateway serves it. */
  consoleOrigin?: string
  log: FastifyBaseLogger
}

const FILE_CHANGE_DEBOUNCE_MS = 100

/**
 * The route table in force, swapped whole on reload so that in-flight requests finish
 * on the table they started with. Built at once: a bad upstreams config throws here.
 */
export function createLiveRouteTable (options: LiveRouteTableOptions) {
  const { source, log } = options
  const tableOptions = { identityOrigin: options.identityOrigin, ...(options.consoleOrigin !== undefined ? { consoleOrigin: options.consoleOrigin } : {}) }
  let table: RouteTable = buildRouteTable(loadConfig(), tableOptions)
  let watcher: FSWatcher | null = null

  function loadConfig (): UpstreamsConfig {
    if ('file' in source) {
      const loaded = loadUpstreamsFile(source.file)
      for (const warning of loaded.warnings) log.warn({ file: source.file }, warning)
      return loaded.config
    }
    const loaded = parseUpstreams(JSON.stringify(source.config), 'plugin option upstreams', 'json')
    for (const warning of loaded.warnings) log.warn(warning)
    return loaded.config
  }

  /** Reads the upstreams again; an invalid config is logged and the current one stays. */
  function reload (): boolean {
    try {
      table = buildRouteTable(loadConfig(), tableOptions)
      log.info({ upstreams: table.upstreams.length, routes: table.routeCount }, 'upstreams reloaded')
      return true
    } catch (err) {
      const problems = err instanceof ConfigError ? err.problems : [(err as Error).message]
      log.error({ problems }, 'upstreams reload rejected; the previous config stays in force')
      return false
    }
  }

  return {
    get table (): RouteTable { return table },
    reload,

    /** The pool an origin's connections get when it is first called: its (first) upstream's settings. */
    poolSettings (origin: string): UpstreamPoolSettings {
      const upstream = table.upstreams.find((u) => u.origin === origin)
      return {
        connectTimeoutMs: upstream?.timeouts.connectMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
        connections: upstream?.connections ?? DEFAULT_UPSTREAM_CONNECTIONS
      }
    },

    /** Reloads when the upstreams file changes on disk (nothing to watch for a config passed as such). */
    watch (): void {
      if (!('file' in source) || watcher !== null) return
      const file = source.file
      let debounce: NodeJS.Timeout | undefined
      // The folder, not the file: editors replace files by rename, which a file watch loses.
      watcher = watch(dirname(resolve(file)), (_event, name) => {
        if (name !== basename(file)) return
        clearTimeout(debounce)
        debounce = setTimeout(reload, FILE_CHANGE_DEBOUNCE_MS)
      })
      watcher.on('error', (err) => { log.warn({ err }, 'upstreams file watch failed; SIGHUP still reloads') })
    },

    close (): void {
      watcher?.close()
    }
  }
}

export type LiveRouteTable = ReturnType<typeof createLiveRouteTable>
