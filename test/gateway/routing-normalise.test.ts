import t from 'tap'
import { MAX_PATH_LENGTH, normalisePath } from '../../gateway/routing/index.js'

/**
 * Path normalisation decides which path is authorised and forwarded, so each trick
 * that could make a server on the way see another path is refused, with its reason.
 */
const ENCODED_STRUCTURE = 'percent-encoded dot, slash, backslash or NUL'
const NOT_UTF8 = 'percent-escapes that are not valid UTF-8'
const MALFORMED = 'malformed percent-escape'
const RAW_CHARACTER = 'control, space or non-ASCII character (percent-encode it)'
const DOT_SEGMENT = 'dot segment (. or ..)'

t.test('refused, with the reason', async (t) => {
  const cases: Array<[string, string]> = [
    // Dot segments, raw and encoded in every case and mix.
    ['/users/../admin', DOT_SEGMENT],
    ['/users/./x', DOT_SEGMENT],
    ['/users/..', DOT_SEGMENT],
    ['/..', DOT_SEGMENT],
    ['/.', DOT_SEGMENT],
    ['/users/%2e%2e/admin', ENCODED_STRUCTURE],
    ['/users/%2E%2E/admin', ENCODED_STRUCTURE],
    ['/users/.%2e/admin', ENCODED_STRUCTURE],
    ['/users/%2e./admin', ENCODED_STRUCTURE],
    ['/users/%2e/x', ENCODED_STRUCTURE],
    ['/users/file%2ejson', ENCODED_STRUCTURE],
    // Encoded separators and NUL.
    ['/users/..%2fadmin', ENCODED_STRUCTURE],
    ['/users%2F1', ENCODED_STRUCTURE],
    ['/users%2f1', ENCODED_STRUCTURE],
    ['/users%5c..%5cadmin', ENCODED_STRUCTURE],
    ['/users%5C1', ENCODED_STRUCTURE],
    ['/users%00', ENCODED_STRUCTURE],
    ['/users/1%00.json', ENCODED_STRUCTURE],
    // Double encoding, for upstreams that decode twice.
    ['/users/%252e%252e/admin', 'double percent-encoded dot, slash, backslash or NUL'],
    ['/users%252F1', 'double percent-encoded dot, slash, backslash or NUL'],
    ['/users%255c1', 'double percent-encoded dot, slash, backslash or NUL'],
    ['/users%2500', 'double percent-encoded dot, slash, backslash or NUL'],
    ['/users/%25%32%65', 'double percent-encoded dot, slash, backslash or NUL'],
    // Encoded control characters.
    ['/users/1%0d%0aX-Injected:%20yes', 'percent-encoded control character'],
    ['/users/%7f', 'percent-encoded control character'],
    ['/users/%1F', 'percent-encoded control character'],
    // Malformed escapes.
    ['/users/%zz', MALFORMED],
    ['/users/%e', MALFORMED],
    ['/users/%', MALFORMED],
    ['/users/%%32e', MALFORMED],
    ['/users/%2', MALFORMED],
    ['/users/%g0', MALFORMED],
    // Invalid UTF-8: overlong dots and slashes, stray and truncated bytes, surrogates.
    ['/users/%c0%ae%c0%ae/admin', NOT_UTF8],
    ['/users/%C0%AE', NOT_UTF8],
    ['/users/%e0%80%af', NOT_UTF8],
    ['/users/%c0%af', NOT_UTF8],
    ['/users/%f0%80%80%af', NOT_UTF8],
    ['/users/%80', NOT_UTF8],
    ['/users/%c3', NOT_UTF8],
    ['/users/%c3x', NOT_UTF8],
    ['/users/%ff', NOT_UTF8],
    ['/users/%ed%a0%80', NOT_UTF8],
    // Backslashes, matrix parameters, fragments.
    ['/users\\..\\admin', 'backslash'],
    ['/users\\1', 'backslash'],
    ['/users;x=1', 'semicolon (matrix parameters)'],
    ['/users/..;/admin', 'semicolon (matrix parameters)'],
    ['/users;jsessionid=1/2', 'semicolon (matrix parameters)'],
    ['/users#x', 'fragment (#) in the request target'],
    ['/users?x=1#y', 'fragment (#) in the request target'],
    // Raw characters that must be encoded.
    ['/usérs', RAW_CHARACTER],
    ['/users/日本', RAW_CHARACTER],
    ['/users/a b', RAW_CHARACTER],
    ['/users/a\tb', RAW_CHARACTER],
    ['/users/a\nb', RAW_CHARACTER],
    ['/users/\u0000', RAW_CHARACTER],
    ['/users/\u007f', RAW_CHARACTER],
    ['/users/\u0085', RAW_CHARACTER],
    // Empty segments and trailing dots.
    ['//users', 'empty path segment (//)'],
    ['/users//1', 'empty path segment (//)'],
    ['/users//', 'empty path segment (//)'],
    ['//', 'empty path segment (//)'],
    ['/users.', 'path segment ending in a dot'],
    ['/users/1.', 'path segment ending in a dot'],
    ['/users.../x', 'path segment ending in a dot'],
    ['/users./', 'path segment ending in a dot'],
    // Not an origin-form path.
    ['users', 'the path must start with /'],
    ['', 'the path must start with /'],
    ['*', 'the path must start with /'],
    ['http://evil.example/admin', 'the path must start with /'],
    ['?x=1', 'the path must start with /'],
    // Too long.
    [`/${'a'.repeat(MAX_PATH_LENGTH)}`, `path longer than ${MAX_PATH_LENGTH} characters`]
  ]
  for (const [url, reason] of cases) {
    t.same(normalisePath(url), { ok: false, reason, part: 'path' }, JSON.stringify(url).slice(0, 80))
  }
})

t.test('a query string is checked for syntax only, and refused as the query', async (t) => {
  const refused: Array<[string, string]> = [
    ['/users?q=%zz', MALFORMED],
    ['/users?a=%', MALFORMED],
    ['/users?%', MALFORMED],
    ['/users?a=%2', MALFORMED],
    ['/users?a=%g0', MALFORMED],
    ['/users?a=1&b=%%32e', MALFORMED],
    ['/.well-known/jwks.json?a=%', MALFORMED],
    ['/users?a=b c', RAW_CHARACTER],
    ['/users?a=\u0001', RAW_CHARACTER],
    ['/users?a=\u007f', RAW_CHARACTER],
    ['/users?a=\u00e9', RAW_CHARACTER],
    ['/users?a=\t', RAW_CHARACTER]
  ]
  for (const [url, reason] of refused) {
    t.same(normalisePath(url), { ok: false, reason, part: 'query' }, JSON.stringify(url))
  }
  t.same(normalisePath('/users/%2e%2e?a=%'), { ok: false, reason: ENCODED_STRUCTURE, part: 'path' }, 'a bad path is reported before a bad query')
})

t.test('accepted and normalised', async (t) => {
  const cases: Array<[string, string, string]> = [
    ['/', '/', ''],
    ['/users', '/users', ''],
    ['/users/', '/users', ''],
    ['/users/42/', '/users/42', ''],
    ['/USERS', '/USERS', ''],
    ['/Users/AbC', '/Users/AbC', ''],
    ['/users?x=1', '/users', '?x=1'],
    ['/users?', '/users', '?'],
    ['/users/?page=2', '/users', '?page=2'],
    ['/?', '/', '?'],
    // The query is returned raw: dots, slashes and escapes in it are values, never a path.
    ['/users?x=%2e', '/users', '?x=%2e'],
    ['/users?path=../../admin&y=%2f;z', '/users', '?path=../../admin&y=%2f;z'],
    ['/users?x=/..', '/users', '?x=/..'],
    ['/users?x=%2e%2e/&next=/admin', '/users', '?x=%2e%2e/&next=/admin'],
    ['/users?q=%C0%AE%ff&r=%00', '/users', '?q=%C0%AE%ff&r=%00'],
    ["/users?q='\"<>`{}|^\\", '/users', "?q='\"<>`{}|^\\"],
    // Escapes other than unreserved characters stay as written.
    ['/users/a%20b', '/users/a%20b', ''],
    ['/users/%C3%A9t%C3%A9', '/users/%C3%A9t%C3%A9', ''],
    ['/users/%c3%a9', '/users/%c3%a9', ''],
    ['/users/%f0%9f%98%80', '/users/%f0%9f%98%80', ''],
    ['/users/a%3Fb%23c%25', '/users/a%3Fb%23c%25', ''],
    ['/users/100%25', '/users/100%25', ''],
    ['/search/a%2Bb%26c', '/search/a%2Bb%26c', ''],
    // Encoded unreserved characters are decoded, so every server reads one spelling.
    ['/%75sers', '/users', ''],
    ['/%61dmin/keys', '/admin/keys', ''],
    ['/users/%7Ejane', '/users/~jane', ''],
    ['/users/a%2Db%5Fc', '/users/a-b_c', ''],
    ['/users/%41%7a%30%39', '/users/Az09', ''],
    // Dots inside segments and other legal characters.
    ['/.well-known/jwks.json', '/.well-known/jwks.json', ''],
    ['/files/archive.tar.gz', '/files/archive.tar.gz', ''],
    ['/files/...x', '/files/...x', ''],
    ["/a/b:c@d!$&'()*+,=~_-", "/a/b:c@d!$&'()*+,=~_-", ''],
    [`/${'a'.repeat(MAX_PATH_LENGTH - 1)}`, `/${'a'.repeat(MAX_PATH_LENGTH - 1)}`, ''],
    [`/${'a'.repeat(MAX_PATH_LENGTH - 1)}?${'q'.repeat(5000)}`, `/${'a'.repeat(MAX_PATH_LENGTH - 1)}`, `?${'q'.repeat(5000)}`]
  ]
  for (const [url, path, search] of cases) {
    t.same(normalisePath(url), { ok: true, path, search }, JSON.stringify(url).slice(0, 80))
  }
})

t.test('one trailing slash only', async (t) => {
  t.same(normalisePath('/users/'), { ok: true, path: '/users', search: '' })
  t.same(normalisePath('/users//'), { ok: false, reason: 'empty path segment (//)', part: 'path' })
})

t.test('a 2049-character path is refused, a 2048-character one accepted', async (t) => {
  const accepted = `/${'x'.repeat(2047)}`
  t.equal(accepted.length, 2048)
  t.same(normalisePath(accepted), { ok: true, path: accepted, search: '' })
  t.same(normalisePath(`${accepted}x`), { ok: false, reason: 'path longer than 2048 characters', part: 'path' })
  t.same(normalisePath(`${accepted}?${'q'.repeat(100)}`), { ok: true, path: accepted, search: `?${'q'.repeat(100)}` }, 'the query does not count')
})
