import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { BASE } from './pages/layout.js'

/**
 * The console's style sheet and script: files in console/assets/, read once at start
 * and served by the console itself (no CDN: the console works offline). Compiled code
 * runs from dist/console/, beside which the source folder is found.
 */
const FILES: Record<string, string> = { 'console.css': 'text/css; charset=utf-8', 'console.js': 'text/javascript; charset=utf-8' }

function assetsFolder (): string {
  for (const relative of ['./assets/', '../../console/assets/']) {
    const folder = fileURLToPath(new URL(relative, import.meta.url))
    if (existsSync(`${folder}console.css`)) return folder
  }
  throw new Error('console/assets/ not found beside the console\'s code')
}

export function assetRoutes (app: FastifyInstance): void {
  const folder = assetsFolder()
  for (const [name, type] of Object.entries(FILES)) {
    const body = readFileSync(`${folder}${name}`)
    app.get(`${BASE}/assets/${name}`, async (_request, reply) =>
      await reply.type(type).header('cache-control', 'public, max-age=3600').send(body))
  }
}
