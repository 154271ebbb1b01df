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

  readonly fatal: LogFn = (...args: Parameters<LogFn>) => { this.#logger().fatal(...args) }
  readonly error: LogFn = (...args: Parameters<LogFn>) => { this.#logger().error(...args) }
  readonly warn: LogFn = (...args: Parameters<LogFn>) => { this.#logger().warn(...args) }
  readonly info: LogFn = (...args: Parameters<LogFn>) => { this.#logger().info(...args) }
  readonly debug: LogFn = (...args: Parameters<LogFn>) => { this.#logger().debug(...args) }
  readonly trace: LogFn = (...args: Parameters<LogFn>) => { this.#logger().trace(...args) }
  readonly silent: LogFn = () => {}

  child (bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.#logger().child(bindings, options)
  }
}

/** Fastify's `childLoggerFactory` for request loggers made on first use. */
export const lazyRequestLoggerFactory: NonNullable<FastifyServerOptions['childLoggerFactory']> = (logger, bindings, options) =>
  new LazyRequestLogger(logger, bindings as Bindings, options) as unknown as FastifyBaseLogger
