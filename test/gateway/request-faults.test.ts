import t from 'tap'
import { Agent } from 'undici'
import { refusedRequestHeader } from '../../gateway/proxy/request-faults.js'

/** undici's own refusal of a request, as the proxy's onError receives it: wrapped by reply-from. */
async function undiciError (headers: Record<string, string>, origin = 'http://127.0.0.1:1'): Promise<Error> {
  const agent = new Agent()
  t.teardown(async () => { await agent.close() })
  try {
    await agent.request({ origin, path: '/', method: 'GET', headers })
  } catch (err) {
    return new Error((err as Error).message, { cause: err })
  }
  throw new Error('undici sent the request')
}

t.test('a header undici will not send is the client\'s fault, named', async (t) => {
  t.equal(refusedRequestHeader(await undiciError({ 'keep-alive': 'timeout=5' })), 'invalid keep-alive header')
  t.equal(refusedRequestHeader(await undiciError({ upgrade: 'websocket' })), 'invalid upgrade header')
  t.equal(refusedRequestHeader(await undiciError({ 'transfer-encoding': 'chunked' })), 'invalid transfer-encoding header')
  t.equal(refusedRequestHeader(await undiciError({ expect: '100-continue' })), 'expect header not supported')
})

t.test('any other failure is not', async (t) => {
  t.equal(refusedRequestHeader(await undiciError({})), null, 'a refused connection is the upstream\'s')
  t.equal(refusedRequestHeader(new Error('boom')), null)
  t.equal(refusedRequestHeader(null), null)
})
