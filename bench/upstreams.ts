import { writeFile } from 'node:fs/promises'
import { DEFAULT_PAGE_SIZE, type PageSize } from './static-upstream/pages.js'

/**
 * The gateways' upstreams file, and the paths the scenarios call through it.
 * (The static upstream the throughput scenarios call is bench/static-upstream/.)
 */

/** The route every throughput scenario calls; the rest only fill the table. */
export const BENCH_PATH = '/users'

/** GET /users for a page of `size` from the static upstream, the same path direct and through any proxy. */
export function staticUsersPath (size: PageSize = DEFAULT_PAGE_SIZE): string {
  return `${BENCH_PATH}?size=${size}`
}

/** The WebSocket route, to the static upstream's echo at /ws. */
export const WEBSOCKET_PATH = '/ws'

/** Where the gateways route upstream-mock's GET /users (the prefix is taken off upstream). */
export const MOCK_PREFIX = '/mock'

const RESOURCES = ['users', 'tasks', 'meetings', 'invoices', 'orders', 'tickets', 'reports', 'teams', 'projects', 'documents']

interface Route { method: string, path: string, permission: string }

function routesOf (resource: string, prefix = ''): Route[] {
  return [
    { method: 'GET', path: `${prefix}/${resource}`, permission: `${resource}:list` },
    { method: 'GET', path: `${prefix}/${resource}/:id`, permission: `${resource}:read` },
    { method: 'POST', path: `${prefix}/${resource}`, permission: `${resource}:create` },
    { method: 'PATCH', path: `${prefix}/${resource}/:id`, permission: `${resource}:update` },
    { method: 'DELETE', path: `${prefix}/${resource}/:id`, permission: `${resource}:delete` }
  ]
}

/**
 * An upstreams file with `routes` routes in all (10 or 1000): GET /users and its
 * neighbours on the static upstream, its WebSocket echo, GET /mock/users on upstream-mock, and beyond
 * those, routes spread over upstreams of 50 routes each, with their own prefixes,
 * parameters and the usual verbs, as a large back office would declare them (they
 * point at the static upstream and are never called).
 */
export function upstreamsDocument (targets: { static: string, mock: string }, routes: number): object {
  const mock = { name: 'realistic', target: targets.mock, prefix: MOCK_PREFIX, keyCase: 'snake', routes: [routesOf('users')[0] as Route] }
  const websocket = { method: 'GET', path: WEBSOCKET_PATH, permission: 'users:list', websocket: true }
  const first = { name: 'backoffice', target: targets.static, keyCase: 'snake', routes: [websocket, ...[...routesOf('users'), ...routesOf('tasks')].slice(0, Math.min(8, routes - 2))] }
  const upstreams: object[] = [first, mock]
  let remaining = routes - first.routes.length - mock.routes.length
  for (let u = 1; remaining > 0; u++) {
    const own: Route[] = []
    for (let r = 0; own.length < Math.min(50, remaining); r++) {
      own.push(...routesOf(RESOURCES[r % RESOURCES.length] as string, `/v${Math.floor(r / RESOURCES.length) + 1}`))
    }
    const taken = own.slice(0, Math.min(50, remaining))
    upstreams.push({ name: `service-${u}`, target: targets.static, prefix: `/service-${u}`, keyCase: 'snake', routes: taken })
    remaining -= taken.length
  }
  return { upstreams }
}

export async function writeUpstreamsFile (file: string, targets: { static: string, mock: string }, routes: number): Promise<string> {
  await writeFile(file, JSON.stringify(upstreamsDocument(targets, routes), null, 2))
  return file
}
