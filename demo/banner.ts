import { DEMO_OPERATOR_ROLE, type DemoAccounts } from './seed.js'
import { EVERY_OPERATOR_PERMISSION } from '../common/operator-permissions.js'

/** Where each part of a one-process start answers. */
export interface DemoUrls {
  gateway: string
  /** The gateway's private metrics listener, or null when GATEWAY_METRICS_PORT is 0. */
  gatewayMetrics: string | null
  identity: string
  identityAdmin: string
  upstreamMock: string
  /** The console, through the gateway. */
  console: string
}

/** One printed example: what to paste, the status and body it answers with, and what follows it. */
export interface CurlStep {
  comment?: string
  command: string
  status: number
  /** The answer's body, `…` standing for what varies; absent when the command keeps it in a variable. */
  expected: string
  /** A shell line to run after the command (reading tokens out of its answer). */
  then?: string
}

const TOKEN_SET = '{"token_type":"Bearer","expires_in":600,"access_token":"eyJ…","refresh_token":"prt_…"}'
const TOKENS_FROM_SESSION = 'AT=$(node -p \'JSON.parse(process.argv[1]).access_token\' "$SESSION"); ' +
  'RT=$(node -p \'JSON.parse(process.argv[1]).refresh_token\' "$SESSION")'

function login (gateway: string, account: { email: string, password: string }): string {
  const body = JSON.stringify({ session: { email: account.email, password: account.password } })
  return `curl -s ${gateway}/sessions -H 'content-type: application/json' -d '${body}'`
}

/**
 * The curl lines printed at first start, in order: each works after the ones above
 * it in one shell (tokens travel in $SESSION, $AT and $RT; `node` reads the JSON, so
 * nothing beyond curl and Node is needed). A test runs exactly the printed lines.
 */
export function curlSteps (urls: Pick<DemoUrls, 'gateway' | 'identityAdmin'>, accounts: DemoAccounts): CurlStep[] {
  const { gateway } = urls
  return [
    {
      comment: 'list users with the demo API key (it has users:list)',
      command: `curl -s '${gateway}/users?per_page=2' -H 'x-api-key: ${accounts.apiKey.key}'`,
      status: 200,
      expected: '{"users":[{"id":1,…},{"id":2,…}],"meta":{"page":1,"per_page":2,…}}'
    },
    {
      comment: 'log in as the demo admin; the token set goes to $SESSION, its tokens to $AT and $RT',
      command: `SESSION=$(${login(gateway, accounts.admin)}); echo "$SESSION"`,
      status: 201,
      expected: TOKEN_SET,
      then: TOKENS_FROM_SESSION
    },
    {
      comment: `the admin is an operator too (${EVERY_OPERATOR_PERMISSION}): the same access token lists API keys on the admin API`,
      command: `curl -s ${urls.identityAdmin}/admin/keys -H "authorization: Bearer $AT"`,
      status: 200,
      expected: '{"api_keys":[{"id":"key_…","name":"demo-key",…}]}'
    },
    {
      comment: 'list users with the access token, through the French alias, keys in camelCase',
      command: `curl -s '${gateway}/utilisateurs?per_page=1' -H "authorization: Bearer $AT" -H 'x-api-inflection: camel'`,
      status: 200,
      expected: '{"users":[{"id":1,"firstName":…}],"meta":{"page":1,"perPage":1,…}}'
    },
    {
      comment: 'refresh through /jetons: a new token set (the old refresh token is now spent)',
      command: `SESSION=$(curl -s ${gateway}/jetons -H "authorization: Bearer $AT" -H 'content-type: application/json' -d "{\\"refresh_token\\":\\"$RT\\"}"); echo "$SESSION"`,
      status: 200,
      expected: TOKEN_SET,
      then: TOKENS_FROM_SESSION
    },
    {
      comment: 'log in as the demo user, who lacks users:list …',
      command: `SESSION=$(${login(gateway, accounts.user)}); echo "$SESSION"`,
      status: 201,
      expected: TOKEN_SET,
      then: 'USER_AT=$(node -p \'JSON.parse(process.argv[1]).access_token\' "$SESSION")'
    },
    {
      comment: '… so listing users is a 403 naming the missing permission',
      command: `curl -s ${gateway}/users -H "authorization: Bearer $USER_AT"`,
      status: 403,
      expected: '{"type":"urn:portier:problem:permission_denied",…,"missing_permission":"users:list"}'
    }
  ]
}

const INDENT = '  '

function table (rows: Array<[string, string]>): string[] {
  const width = Math.max(...rows.map(([label]) => label.length))
  return rows.map(([label, value]) => `${INDENT}${label.padEnd(width)}  ${value}`)
}

export interface BannerInput {
  urls: DemoUrls
  databasePath: string
  credentialsFile: string
  /** How invalidation events travel: in this process, or through the Redis at this URL. */
  redis: string | null
}

function header (input: BannerInput): string[] {
  const { urls } = input
  return [
    '',
    `Portier is running: identity, gateway, console and upstream-mock in this process; events ${input.redis === null ? 'in process (REDIS_URL unset)' : 'through Redis'}.`,
    '',
    ...table([
      ['gateway, the one base URL', `${urls.gateway}   (API docs: ${urls.gateway}/docs)`],
      ['console, in a browser', `${urls.console}   (sign in with a demo account: make and copy your own API keys)`],
      ...(urls.gatewayMetrics !== null ? [['gateway metrics, private', `${urls.gatewayMetrics}/metrics   (Prometheus text; not on the base URL)`] as [string, string]] : []),
      ['identity, public', `${urls.identity}   (docs: ${urls.identity}/docs)`],
      ['identity, admin + internal', `${urls.identityAdmin}   (Authorization: Bearer <adminToken in ${input.credentialsFile}> or an operator's access token)`],
      ['upstream-mock', `${urls.upstreamMock}`],
      ['database', input.databasePath]
    ]),
    ''
  ]
}

const FOOTER = ['Ctrl-C stops Portier: requests in flight finish, then the database is closed.', '']

/** The first start's text: addresses, the demo accounts (their only printing) and the curl lines. */
export function firstStartBanner (input: BannerInput, accounts: DemoAccounts): string {
  const lines = [
    ...header(input),
    'Demo accounts, created now. Their secrets are printed this once and stored only as hashes: keep them.',
    ...table([
      ['admin', `${accounts.admin.email}   password ${accounts.admin.password}   (role admin: every permission; role ${DEMO_OPERATOR_ROLE}: ${EVERY_OPERATOR_PERMISSION}, ` +
        'so their access token also opens the admin API)'],
      ['user', `${accounts.user.email}   password ${accounts.user.password}   (role staff: tasks and meetings, not users:list)`],
      ['API key', `${accounts.apiKey.name}   ${accounts.apiKey.key}   (${accounts.apiKey.permissions.join(', ')}; expires ${new Date(accounts.apiKey.expiresAt).toISOString().slice(0, 10)})`]
    ]),
    '',
    'Try it: paste these lines into a shell, in order (each comment shows the status and body to expect).',
    ''
  ]
  for (const step of curlSteps(input.urls, accounts)) {
    if (step.comment !== undefined) lines.push(`${INDENT}# ${step.comment}`)
    lines.push(`${INDENT}${step.command}`, `${INDENT}#   ${step.status} ${step.expected}`)
    if (step.then !== undefined) lines.push(`${INDENT}${step.then}`)
    lines.push('')
  }
  return [...lines, ...FOOTER].join('\n')
}

/** A later start's text: the same addresses, and where the accounts are — never their secrets. */
export function laterStartBanner (input: BannerInput, counts: { users: number, apiKeys: number }): string {
  return [
    ...header(input),
    `The database holds ${counts.users} users and ${counts.apiKeys} API keys from an earlier start; no new secret is printed.`,
    'Lost the demo secrets? With this process running, in the same folder (and with the same IDENTITY_DATABASE_PATH, if you set one):',
    `${INDENT}npx portier users list                                  # find the user's id`,
    `${INDENT}npx portier users set-password <id> --password-stdin    # then type a new password`,
    `${INDENT}npx portier keys list                                   # find the key's id`,
    `${INDENT}npx portier keys rotate <id>                            # prints a new secret once`,
    'Or stop Portier and delete the data folder to start afresh.',
    '',
    ...FOOTER
  ].join('\n')
}
