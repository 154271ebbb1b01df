/**
 * Freezes `value` and everything it holds, in place, and returns it: what a loader
 * resolves (a configuration, a generated document) is then read by many and changed by
 * none, so a mutation anywhere throws in strict code instead of changing what every
 * other reader sees. Objects already frozen are walked too, since Object.freeze is
 * shallow: a frozen object can hold one that is not.
 */
export function deepFreeze<T> (value: T, walked = new WeakSet<object>()): T {
  if (typeof value !== 'object' || value === null || walked.has(value)) return value
  walked.add(value)
  // A typed array with elements cannot be frozen (its bytes stay writable whatever is done).
  if (ArrayBuffer.isView(value)) return value
  for (const member of Object.values(value)) deepFreeze(member, walked)
  return Object.freeze(value)
}
