/** undici's error codes for a request it will not send (InvalidArgumentError, NotSupportedError). */
const REFUSED_REQUEST_CODES = new Set(['UND_ERR_INVALID_ARG', 'UND_ERR_NOT_SUPPORTED'])

/**
 * The reason undici refused to send the request because of one of its headers
 * ("invalid keep-alive header", "expect header not supported", "invalid header key"),
 * or null for any other failure. reply-from wraps the error; undici's is its cause.
 * Such a request never left the gateway: it is the client's fault (a 400), not the
 * upstream's (a 502). The forwarded headers are filtered so that this should not
 * happen; this keeps a header undici starts refusing from reading as an outage.
 */
export function refusedRequestHeader (error: unknown): string | null {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 3; cause = cause.cause, depth++) {
    const code = (cause as { code?: unknown }).code
    if (typeof code === 'string' && REFUSED_REQUEST_CODES.has(code) && /\bheader\b/i.test(cause.message)) return cause.message
  }
  return null
}
