/**
 * Where every Portier service serves its documentation. Apart from common/openapi.ts
 * so that what only needs the paths (the gateway's config checks, identity's admin
 * guard) does not load @fastify/swagger.
 */
export const DOCS_PREFIX = '/docs'
export const DOCUMENT_PATH = '/openapi.json'

/** The documentation: the document, the UI page and its assets under `/docs/`. */
export function isDocumentationPath (path: string): boolean {
  return path === DOCUMENT_PATH || path === DOCS_PREFIX || path.startsWith(`${DOCS_PREFIX}/`)
}
