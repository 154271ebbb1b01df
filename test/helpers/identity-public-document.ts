import { readFileSync, writeFileSync } from 'node:fs'
import { identityPublicDocument } from '../../identity/openapi.js'
import { repoPath } from './repo-root.js'

/**
 * The gateway's copy of identity's public document: the gateway republishes identity's
 * public operations from this committed file and never loads identity's code. It is
 * identity's generated document without `info.version`, so that a release alone does
 * not change it. `npm run docs:identity` writes it; test/docs/identity-public.test.ts
 * fails when it no longer matches what identity generates.
 */
export const IDENTITY_PUBLIC_FILE = repoPath('gateway/docs/identity-public.json')
export const WRITE_VARIABLE = 'PORTIER_WRITE_IDENTITY_DOCUMENT'

/** The file's text as identity's code generates it now. */
export async function generatedIdentityPublicText (): Promise<string> {
  const { openapi, info: { version: _version, ...info }, ...document } = await identityPublicDocument()
  return `${JSON.stringify({ openapi, info, ...document }, null, 2)}\n`
}

export const committedIdentityPublicText = (): string => readFileSync(IDENTITY_PUBLIC_FILE, 'utf8')

export function writeIdentityPublicText (text: string): void {
  writeFileSync(IDENTITY_PUBLIC_FILE, text)
}
