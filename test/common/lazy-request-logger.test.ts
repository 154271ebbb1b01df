import t from 'tap'
import { PassThrough } from 'node:stream'
import { createHttpApp } from '../../common/http-app.js'

/**
 * A request's own logger is made the first time something logs through it: a line
 * logged by hand still carries the request's id and is still redacted, and a request
 * that logs nothing of its own costs no child logger.
 */
t.test('request loggers are made on first use', async (t) => {
  const stream = new PassThrough()
  let text = ''
  stream.on('data', (chunk: Buffer) => { text += chunk.toString() })
  const app = createHttpApp({ name: 'lazy', logLevel: 'info', logStream: stream, bodyLimitBytes: 1_024 })
  app.get('/quiet', async () => ({ ok: true }))
  app.get('/talks', async (request) => {
    request.log.warn({ password: 'hunter2' }, 'said by hand')
    request.log.child({ step: 'inner' }).info('from a child')
    return { ok: true }
  })
  await app.ready()
  t.teardown(async () => { await app.close() })

  // Counts children of the app's logger only (loggers made from it inherit this method too).
  let made = 0
  const root = app.log
  const child = root.child
  root.child = function (this: typeof root, ...args: Parameters<typeof child>) {
    if (this === root) made++
    return child.apply(this, args)
  } as typeof child

  const quiet = await app.inject({ url: '/quiet', headers: { 'x-request-id': 'quiet-1' } })
  t.equal(quiet.statusCode, 200)
  t.equal(made, 0, 'a request that logs nothing of its own makes no child logger')

  const talks = await app.inject({ url: '/talks', headers: { 'x-request-id': 'talks-1' } })
  t.equal(talks.statusCode, 200)
  t.equal(made, 1, 'the first line logged by hand makes it, once')
  await new Promise((resolve) => setImmediate(resolve))
  const lines = text.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>)
  const byHand = lines.find((line) => line.msg === 'said by hand')
  t.match(byHand, { request_id: 'talks-1', level: 40, password: '[redacted]' }, 'the line carries the request id, redacted as before')
  t.match(lines.find((line) => line.msg === 'from a child'), { request_id: 'talks-1', step: 'inner' }, 'its children carry both bindings')
  t.match(lines.filter((line) => line.msg === 'request').map((line) => line.request_id), ['quiet-1', 'talks-1'], 'every request has its access line')
  t.equal(app.log.level, 'info')
})
