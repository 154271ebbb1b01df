import t from 'tap'
import { bodyOverridesMethod, queryOverridesMethod } from '../../gateway/method-override.js'

/**
 * Every spelling a framework folds to `_method` (or to an override header's name) is
 * an override; names that merely contain "method" are not.
 */
t.test('query names read as an override', async (t) => {
  const overrides = ['?_method=DELETE', '?%5Fmethod=DELETE', '?%5fMETHOD=1', '?.method=DELETE', '?%2emethod=1', '?+method=1', '?%20method=1',
    '?+_method=1', '?%20%20_method=1', '?_METHOD=1', '?_Method=1', '?_method[]=1', '?_method[a][b]=1', '?_method%5b%5d=1', '?_method[=1',
    '?%255Fmethod=1', '?%25255Fmethod=1', '?_method%00junk=1', '?a=1;_method=1', '?a=1&_method', '?a&b&_method=', '?x-http-method-override=1',
    '?X-HTTP-METHOD=1', '?x-method-override=1', '?x.http.method.override=1', '?x_http_method=1', '?_HttpMethod=1', '?_http%4Dethod=1']
  for (const search of overrides) t.equal(queryOverridesMethod(search), true, search)
  const plain = ['', '?', '?method=GET', '?methods=1', '?_methods=1', '?payment_method=card', '?q=_method', '?a=%5Fmethod', '?methodology',
    '?my_method=1', '?x-http-method-overrides=1', '?%41=1', '?a=1&b=2', '?__method=1']
  for (const search of plain) t.equal(queryOverridesMethod(search), false, `${search}: not an override`)
})

t.test('JSON body members read as an override', async (t) => {
  const overrides = ['{"_method":"DELETE"}', '{"a":1,"_method":"DELETE"}', '{"_METHOD":1}', '{"\\u005fmethod":1}', '{"_\\u006Dethod":1}',
    '{".method":1}', '{" _method":1}', '{"_method[]":1}', '{"x-http-method-override":1}', '{"X_HTTP_METHOD":1}', '{"x_method_override":1}',
    '{"_HttpMethod":1}', '{"_method\\u0000x":1}']
  for (const body of overrides) t.equal(bodyOverridesMethod(body), 'override', body)
  const plain = ['{}', '{"method":"card"}', '{"payment_method":"card"}', '{"nested":{"_method":"DELETE"}}', '["_method"]', '"_method"', 'null',
    '{"title":"caf\\u00e9"}', '{"a":"_method"}']
  for (const body of plain) t.equal(bodyOverridesMethod(body), 'none', `${body}: not an override`)
  t.equal(bodyOverridesMethod('{"title":"no mention"'), 'none', 'a body that never mentions a method is not parsed here')
  t.equal(bodyOverridesMethod('{"_method":"DELETE",}'), 'unreadable', 'one that mentions it and does not parse cannot be judged')
  t.equal(bodyOverridesMethod('{"\\u005fx":1'), 'unreadable', 'nor one with an escape that does not parse')
})
