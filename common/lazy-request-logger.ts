import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify'

type Bindings = Record<string, unknown>
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1]
type LogFn = FastifyBaseLogger['info']

/**
 * A request's logger, made only when something logs through it. Fastify gives every
 * request a pino child bound to its id; making one serialises the bindings through
 * the redaction pass, a few microseconds a request spends although most requests log
 * nothing of their own (the access line has its own logger, common/logger.ts).
 */
class LazyRequestLogger {
  #made: FastifyBaseLogger | null = null
  readonly #parent: FastifyBaseLogger
  readonly #bindings: Bindings
  readonly #options: ChildOptions

  constructor (parent: FastifyBaseLogger, bindings: Bindings, options: ChildOptions) {
    this.#parent = parent
    this.#bindings = bindings
    this.#options = options
  }

  #logger (): FastifyBaseLogger {
    this.#made ??= this.#parent.child(this.#bindings, this.#options)
    return this.#made
  }

  get level (): string { return this.#made?.level ?? this.#parent.level }
  set level (level: string) { this.#logger().level = level }

  // Methods on the prototype, not bound per instance: a request that logs nothing allocates nothing for them.
  fatal (...args: Parameters<LogFn>): void { this.#logger().fatal(...args) }
  error (...args: Parameters<LogFn>): void { this.#logger().error(...args) }
  warn (...args: Parameters<LogFn>): void { this.#logger().warn(...args) }
  info (...args: Parameters<LogFn>): void { this.#logger().info(...args) }
  debug (...args: Parameters<LogFn>): void { this.#logger().debug(...args) }
  trace (...args: Parameters<LogFn>): void { this.#logger().trace(...args) }
  silent (): void {}

  child (bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.#logger().child(bindings, options)
  }
}

/** Fastify's `childLoggerFactory` for request loggers made on first use. */
export const lazyRequestLoggerFactory: NonNullable<FastifyServerOptions['childLoggerFactory']> = (logger, bindings, options) =>
  new LazyRequestLogger(logger, bindings as Bindings, options) as unknown as FastifyBaseLogger
