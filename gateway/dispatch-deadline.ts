import { errors, type Dispatcher } from 'undici'

/** How much of an exchange the deadline covers. */
export type DeadlineScope =
  /** Until the response headers; the body then has undici's bodyTimeout between chunks (streamed proxy answers). */
  | 'headers'
  /** Until the last byte of the body (small answers read whole: identity's). */
  | 'whole'

/**
 * An undici interceptor that turns a request's `headersTimeout` into a deadline counted
 * from the moment the request is dispatched, instead of from the moment a connection
 * writes it. undici's own timers start only once a pooled connection takes the request:
 * a request queued behind busy connections waits untimed, and an AbortSignal does not
 * help either (undici looks at it only when a connection picks the request up). Here
 * one native timer per request starts at dispatch and covers the pool's queue,
 * connecting, writing and the wait for the headers (and, with scope 'whole', the
 * body). When it passes, the caller gets a HeadersTimeoutError (BodyTimeoutError once
 * the headers are in) at once, whether or not a connection ever took the request;
 * undici's own headers timer is turned off for requests this governs, so the deadline
 * is as precise as a native timer, not undici's ~0.5 s ticks.
 */
export function dispatchDeadline (scope: DeadlineScope): Dispatcher.DispatcherComposeInterceptor {
  return (dispatch) => (options, handler) => {
    const deadlineMs = options.headersTimeout
    if (deadlineMs === undefined || deadlineMs === null || deadlineMs <= 0) return dispatch(options, handler)
    const governed = { ...options, headersTimeout: 0, ...(scope === 'whole' ? { bodyTimeout: 0 } : {}) }
    return dispatch(governed, new DeadlineHandler(handler, deadlineMs, scope))
  }
}

/** What the caller's handler is given with an error for a request no connection has taken yet: nothing left to control. */
function queuedController (reason: Error): Dispatcher.DispatchController {
  return { aborted: true, paused: false, reason, abort () {}, pause () {}, resume () {} }
}

class DeadlineHandler implements Dispatcher.DispatchHandler {
  readonly #inner: Dispatcher.DispatchHandler
  readonly #deadlineMs: number
  readonly #scope: DeadlineScope
  readonly #timer: NodeJS.Timeout
  #controller: Dispatcher.DispatchController | null = null
  #headersIn = false
  /** The caller has had its error (ours or undici's): nothing more reaches it. */
  #settled = false
  #expired: Error | null = null

  constructor (inner: Dispatcher.DispatchHandler, deadlineMs: number, scope: DeadlineScope) {
    this.#inner = inner
    this.#deadlineMs = deadlineMs
    this.#scope = scope
    // Unref'd: a pending request keeps the process alive through its socket, not through this timer.
    this.#timer = setTimeout(() => { this.#expire() }, deadlineMs).unref()
  }

  #expire (): void {
    if (this.#settled) return
    const error = this.#headersIn
      ? new errors.BodyTimeoutError(`the response body did not end within ${this.#deadlineMs} ms of the request`)
      : new errors.HeadersTimeoutError(`no response headers within ${this.#deadlineMs} ms of the request (queue and connect included)`)
    this.#expired = error
    if (this.#controller !== null) {
      // On a connection: undici ends the exchange and reports the error through onResponseError.
      this.#controller.abort(error)
      return
    }
    // Still queued in the pool: answer the caller now; the request is dropped when a connection reaches it.
    this.#settled = true
    this.#inner.onResponseError?.(queuedController(error), error)
  }

  onRequestStart (controller: Dispatcher.DispatchController, context: unknown): void {
    if (this.#expired !== null) {
      // Thrown rather than controller.abort(): undici then drops the request without writing
      // it and keeps the connection for the next one (abort would destroy the socket).
      throw this.#expired
    }
    this.#controller = controller
    this.#inner.onRequestStart?.(controller, context)
  }

  onRequestUpgrade (controller: Dispatcher.DispatchController, statusCode: number, headers: Parameters<NonNullable<Dispatcher.DispatchHandler['onRequestUpgrade']>>[2], socket: Parameters<NonNullable<Dispatcher.DispatchHandler['onRequestUpgrade']>>[3]): void {
    clearTimeout(this.#timer)
    this.#inner.onRequestUpgrade?.(controller, statusCode, headers, socket)
  }

  onResponseStart (controller: Dispatcher.DispatchController, statusCode: number, headers: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseStart']>>[2], statusMessage?: string): void {
    if (this.#settled) return
    // 1xx answers are interim: the deadline still runs until the final status.
    if (statusCode >= 200) {
      this.#headersIn = true
      if (this.#scope === 'headers') clearTimeout(this.#timer)
    }
    this.#inner.onResponseStart?.(controller, statusCode, headers, statusMessage)
  }

  onResponseData (controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled) return
    this.#inner.onResponseData?.(controller, chunk)
  }

  onResponseEnd (controller: Dispatcher.DispatchController, trailers: Parameters<NonNullable<Dispatcher.DispatchHandler['onResponseEnd']>>[1]): void {
    clearTimeout(this.#timer)
    if (this.#settled) return
    this.#settled = true
    this.#inner.onResponseEnd?.(controller, trailers)
  }

  onResponseError (controller: Dispatcher.DispatchController, error: Error): void {
    clearTimeout(this.#timer)
    if (this.#settled) return
    this.#settled = true
    this.#inner.onResponseError?.(controller, error)
  }
}
