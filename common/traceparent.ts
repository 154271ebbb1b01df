/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/#traceparent-header):
 * `version-traceid-parentid-flags`, lower-case hex. Version 00 is exactly 55
 * characters; a later version may append fields after a dash, and ff is invalid.
 */
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}(?:-|$)/
const ZERO_TRACE_ID = '0'.repeat(32)
const ZERO_PARENT_ID = '0'.repeat(16)
const V00_LENGTH = 55

/**
 * The trace id of a request's `traceparent` header when it is valid, otherwise null
 * (absent, repeated, malformed, or an all-zero id): only read, so that log lines of one
 * trace can be found together; a header that does not parse is ignored, as the
 * specification says, never refused.
 */
export function traceIdOf (header: string | string[] | undefined): string | null {
  if (typeof header !== 'string' || !TRACEPARENT.test(header)) return null
  if (header.startsWith('ff') || (header.startsWith('00') && header.length !== V00_LENGTH)) return null
  if (header.startsWith(ZERO_TRACE_ID, 3) || header.startsWith(ZERO_PARENT_ID, 36)) return null
  return header.slice(3, 35)
}
