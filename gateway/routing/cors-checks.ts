import type { UpstreamsFileContent } from './schema.js'

type Cors = NonNullable<UpstreamsFileContent['upstreams'][number]['cors']>
type Routes = UpstreamsFileContent['upstreams'][number]['routes']

/**
 * What is wrong with one configured origin, if anything. Browsers send Origin as
 * `scheme://host[:port]`, lower case, without a default port or a path, and the
 * gateway compares it exactly: an origin written any other way would never match, so
 * it is refused with the spelling that would.
 */
function originProblem (origin: string): string | undefined {
  let url: URL
  try {
    url = new URL(origin)
  } catch {
    return 'is not an origin: write scheme://host[:port], e.g. https://app.example.com'
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'is not an origin: its scheme must be http or https'
  if (url.username !== '' || url.password !== '') return 'is not an origin: it may not hold credentials'
  if (url.origin !== origin) {
    return `is not an origin as browsers send it: write ${url.origin} (scheme://host[:port], lower case, no default port, no path, query or trailing /)`
  }
  return undefined
}

/**
 * The rules of a cors block the schema cannot express: every origin exact or `*`
 * alone, never `*` with credentials (browsers refuse that answer, and echoing any
 * origin instead would let every site call with the user's credentials), and listed
 * methods that the upstream's routes declare. Places are given as in the file.
 */
export function corsProblems (cors: Cors, routes: Routes, place: string): string[] {
  const problems: string[] = []
  const wildcard = cors.origins.includes('*')
  cors.origins.forEach((origin, k) => {
    if (origin === '*') {
      if (cors.origins.length > 1) problems.push(`${place}.origins[${k}]: "*" allows every origin, so it must be the only one listed`)
      return
    }
    const problem = originProblem(origin)
    if (problem !== undefined) problems.push(`${place}.origins[${k}]: ${origin} ${problem}`)
  })
  if (wildcard && cors.credentials) {
    problems.push(`${place}.credentials: cannot be true while origins is "*": list the origins that may call with credentials`)
  }
  const declared = new Set(routes.map((r) => r.method))
  if (declared.has('GET')) declared.add('HEAD')
  cors.methods?.forEach((method, k) => {
    if (!declared.has(method)) problems.push(`${place}.methods[${k}]: ${method} is the method of no route of this upstream`)
  })
  return problems
}
