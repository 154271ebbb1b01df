import { writeFile } from 'node:fs/promises'

/** The route every throughput scenario calls; the rest only fill the table. */
export const BENCH_PATH = '/users'

const RESOURCES = ['users', 'tasks', 'meetings', 'invoices', 'orders', 'tickets', 'reports', 'teams', 'projects', 'documents']

function routesOf (resource: string, prefix = ''): Array<{ method: string, path: string, permission: string }> {
  return [
    { method: 'GET', path: `${prefix}/${resource}`, permission: `${resource}:list` },
    { method: 'GET', path: `${prefix}/${resource}/:id`, permission: `${resource}:read` },
    { method: 'POST', path: `${prefix}/${resource}`, permission: `${resource}:create` },
    { method: 'PATCH', path: `${prefix}/${resource}/:id`, permission: `${resource}:update` },
    { method: 'DELETE', path: `${prefix}/${resource}/:id`, permission: `${resource}:delete` }
  ]
}

/**
 * An upstreams file with `routes` routes in all (10 or 1000), GET /users among them.
 * Beyond the first upstream, routes are spread over upstreams of 50 routes each, with
 * their own prefixes, parameters and the usual verbs, as a large back office would
 * declare them; all point at the mock.
 */
export function upstreamsDocument (target: string, routes: number): object {
  const first = { name: 'backoffice', target, keyCase: 'snake', routes: [...routesOf('users'), ...routesOf('tasks')].slice(0, Math.min(10, routes)) }
  const upstreams: object[] = [first]
  let remaining = routes - first.routes.length
  for (let u = 1; remaining > 0; u++) {
    const own: Array<{ method: string, path: string, permission: string }> = []
    for (let r = 0; own.length < Math.min(50, remaining); r++) {
      own.push(...routesOf(RESOURCES[r % RESOURCES.length] as string, `/v${Math.floor(r / RESOURCES.length) + 1}`))
    }
    const taken = own.slice(0, Math.min(50, remaining))
    upstreams.push({ name: `service-${u}`, target, prefix: `/service-${u}`, keyCase: 'snake', routes: taken })
    remaining -= taken.length
  }
  return { upstreams }
}

export async function writeUpstreamsFile (file: string, target: string, routes: number): Promise<string> {
  await writeFile(file, JSON.stringify(upstreamsDocument(target, routes), null, 2))
  return file
}
