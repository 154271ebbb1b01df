import t from 'tap'
import { PassThrough } from 'node:stream'
import { pino, type LoggerOptions } from 'pino'
import { loggerOptions } from '../../common/logger.js'

/**
 * Redaction is the second line of defence: request logging writes no headers or
 * bodies at all, but anything logged by hand that carries a credential, password,
 * token, key or secret is censored by pino itself.
 */
t.test('security: credentials logged by hand are censored', async (t) => {
  const stream = new PassThrough()
  let text = ''
  stream.on('data', (chunk: Buffer) => { text += chunk.toString() })
  const log = pino(loggerOptions({ level: 'info', name: 'test' }) as LoggerOptions, stream)
  const secrets = {
    authorization: 'Bearer eyJ-authorization-secret',
    apiKey: 'ptk_aaaaaaaaaaaa_api-key-secret',
    cookie: 'session=cookie-secret',
    password: 'password-secret',
    refresh: 'prt_refresh-token-secret',
    access: 'eyJ-access-token-secret',
    key: 'key-secret',
    secret: 'plain-secret',
    token: 'token-secret'
  }
  log.info({ req: { headers: { authorization: secrets.authorization, 'x-api-key': secrets.apiKey, cookie: secrets.cookie } } }, 'a request')
  log.info({ headers: { authorization: secrets.authorization, 'x-api-key': secrets.apiKey } }, 'bare headers')
  log.info({ session: { email: 'ada@example.com', password: secrets.password } }, 'a login body')
  log.info({ refresh_token: secrets.refresh, access_token: secrets.access, password: secrets.password }, 'a token set')
  log.info({ body: { key: secrets.key, secret: secrets.secret, token: secrets.token, refresh_token: secrets.refresh } }, 'nested')
  await new Promise((resolve) => setImmediate(resolve))

  const lines = text.trim().split('\n')
  t.equal(lines.length, 5, 'every line was written')
  for (const [name, value] of Object.entries(secrets)) t.notOk(text.includes(value), `${name} is censored`)
  t.match(JSON.parse(lines[2] as string), { session: { email: 'ada@example.com', password: '[redacted]' } }, 'other fields stay readable')
  const req = (JSON.parse(lines[0] as string) as { req: Record<string, unknown> }).req
  t.notOk('headers' in req, 'the req serializer keeps method, url and id only')
  t.match(JSON.parse(lines[1] as string), { headers: { authorization: '[redacted]', 'x-api-key': '[redacted]' } })
})
