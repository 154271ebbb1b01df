import t from 'tap'
import { ConfigError } from '../../common/config.js'
import { loadConsoleConfig } from '../../console/config.js'

t.test('the console\'s configuration is checked at start, naming the bad variable', async (t) => {
  t.throws(() => loadConsoleConfig({}), new ConfigError('console environment', ['CONSOLE_COOKIE_SECRET: is required']), 'the cookie secret is required')
  t.throws(() => loadConsoleConfig({ CONSOLE_COOKIE_SECRET: 'short', CONSOLE_PORT: 'x' }), { message: /CONSOLE_PORT: .*\n.*CONSOLE_COOKIE_SECRET: must NOT have fewer than 32 characters|CONSOLE_COOKIE_SECRET: must NOT have fewer than 32 characters[\s\S]*CONSOLE_PORT/ }, 'every bad variable named')
  const config = loadConsoleConfig({ CONSOLE_COOKIE_SECRET: 'c'.repeat(32) })
  t.same({ ...config, cookieSecret: '…' }, {
    host: '127.0.0.1',
    port: 3004,
    identityPublicUrl: 'http://127.0.0.1:3001',
    identityAdminUrl: 'http://127.0.0.1:3002',
    cookieSecret: '…',
    secureCookie: true,
    trustProxy: false,
    logLevel: 'info',
    logFormat: 'json'
  }, 'the defaults: loopback, a Secure cookie, no proxy trusted, JSON logs')
  t.equal(loadConsoleConfig({ CONSOLE_COOKIE_SECRET: 'c'.repeat(32), CONSOLE_TRUST_PROXY: '10.0.0.0/8' }).trustProxy, '10.0.0.0/8')
})
