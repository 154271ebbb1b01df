import { createHash, timingSafeEqual } from 'node:crypto'

/**
 * Compares a presented credential with the configured one in constant time. Both
 * sides are hashed first so that neither their contents nor their lengths leak
 * through timing.
 */
export function credentialsMatch (presented: string, expected: string): boolean {
  const a = createHash('sha256').update(presented).digest()
  const b = createHash('sha256').update(expected).digest()
  return timingSafeEqual(a, b)
}
