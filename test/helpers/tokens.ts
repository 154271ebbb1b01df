/** The user most suites log in as. */
export const ADA = { email: 'ada@example.com', password: 'correct horse battery staple' }

export interface TokenSet { access_token: string, refresh_token: string }
/** A login's token set, with the session id its access token names. */
export type SessionTokens = TokenSet & { token_type: string, expires_in: number, sid: string }

/** The claims of an access token, decoded without verification. */
export function claimsOf (accessToken: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(accessToken.split('.')[1] as string, 'base64url').toString()) as Record<string, unknown>
}

/** The session id (`sid` claim) of an access token. */
export const sidOf = (accessToken: string): string => claimsOf(accessToken).sid as string
