import type { Test } from 'tap'

/**
 * Secrets never leak into logs: a suite registers every log source it starts (child
 * processes' stdout and stderr, in-process captures) and every secret it handles
 * (passwords, full API keys, tokens, credentials); at the end no log line may contain
 * any of them. Shapes are checked too, so a secret the suite never saw (a key created
 * inside a service, a stored hash) is caught as well.
 */

/** Shapes no log line may hold, whoever minted the value. */
const SECRET_SHAPES: Array<[string, RegExp]> = [
  ['a JWT', /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}/],
  ['a full API key', /ptk_[0-9A-Za-z]{12}_[0-9A-Za-z]{20,}/],
  ['a refresh token', /prt_[0-9A-Za-z]{20,}/],
  ['an argon2 hash', /\$argon2(?:id|i|d)\$/],
  ['a stored key secret hash', /sha256\$[A-Za-z0-9_-]{43}/]
]

export interface LogSource {
  name: string
  text: () => string
  /** Ends the source first so that its buffered lines are written (a process's exit flush). */
  stop?: () => Promise<void>
}

export interface LeakWatch {
  /** Values that must never appear in a log line (empty and short values are ignored). */
  secret: (...values: Array<string | undefined>) => void
  source: (source: LogSource) => void
  /**
   * Adds the subtest that stops every source and reads every line: run it last in the
   * file, after the cases that produced the logs.
   */
  assertNoLeaks: (t: Test) => Promise<void>
}

const SHORTEST_SECRET = 8

/** One watch per test file. */
export function watchForLeaks (): LeakWatch {
  const secrets = new Set<string>()
  const sources: LogSource[] = []
  return {
    secret (...values) {
      for (const value of values) if (value !== undefined && value.length >= SHORTEST_SECRET) secrets.add(value)
    },
    source (source) { sources.push(source) },
    async assertNoLeaks (t) {
      await t.test('no log line of any process holds a password, a full API key, a token or a stored hash', async (t) => {
        await Promise.all(sources.map(async (s) => { await s.stop?.() }))
        let lines = 0
        const leaks: string[] = []
        for (const source of sources) {
          for (const line of source.text().split('\n')) {
            if (line.trim() === '') continue
            lines++
            for (const [what, shape] of SECRET_SHAPES) if (shape.test(line)) leaks.push(`${source.name}: ${what}`)
            for (const secret of secrets) if (line.includes(secret)) leaks.push(`${source.name}: a secret the suite used (${secret.slice(0, 4)}…)`)
          }
        }
        t.ok(sources.length > 0 && lines > 0, `${lines} log lines read from ${sources.length} sources`)
        t.ok(secrets.size > 0, `${secrets.size} secrets looked for`)
        t.same(leaks, [], 'no line leaks a secret')
      })
    }
  }
}
