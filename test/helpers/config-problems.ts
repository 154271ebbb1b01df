import { ConfigError } from '../../common/config.js'

/** The problems a configuration load reports (none when it loads); any other error is rethrown. */
export function configProblems (load: () => unknown): string[] {
  try {
    load()
  } catch (err) {
    if (err instanceof ConfigError) return err.problems
    throw err
  }
  return []
}
