import type { BenchSettings } from './report/types.js'

export interface RunSettings extends BenchSettings {
  warmupSeconds: number
  flood: { unknown: number, wrongSecret: number }
  mockUsers: number
  /**
   * Keys seeded each with its own per-key rate limit, all of them in the rate-limited
   * many-keys traffic: as many as the many-keys traffic, at most
   * MAX_LIMITED_KEYS_IN_TRAFFIC. Not reported apart: the scenario's title counts them.
   */
  limitedKeysInTraffic: number
}

/** The most keys with a limit of their own in the rate-limited traffic (a full run's). */
export const MAX_LIMITED_KEYS_IN_TRAFFIC = 10_000

/**
 * Full: every figure a median of 6 rounds of 3 s, about 17 minutes on 2 cores: some
 * 40 variants over the scenarios, so rounds are shorter and fewer than a handful of
 * variants would allow (many short rounds follow a noisy machine's swings better than
 * a few long ones). Quick: the same scenarios in 2 rounds of 1 s, no warm-up run per
 * variant and fewer keys (fewer in traffic than the gateway's L1 holds), 2 to 3
 * minutes: a smoke run, its numbers noisier. Durations are whole seconds, which is all
 * wrk takes.
 */
export function defaultSettings (quick: boolean): Omit<RunSettings, 'loadGenerator'> {
  return quick
    ? {
        mode: 'quick',
        durationSeconds: 1,
        rounds: 2,
        warmupSeconds: 0,
        connections: 50,
        keysInIdentity: 10_000,
        distinctKeysInTraffic: 2_000,
        flood: { unknown: 1_000, wrongSecret: 20 },
        mockUsers: 1_000,
        limitedKeysInTraffic: 2_000
      }
    : {
        mode: 'full',
        durationSeconds: 3,
        rounds: 6,
        warmupSeconds: 1,
        connections: 50,
        keysInIdentity: 100_000,
        distinctKeysInTraffic: 20_000,
        flood: { unknown: 2_000, wrongSecret: 100 },
        mockUsers: 1_000,
        limitedKeysInTraffic: MAX_LIMITED_KEYS_IN_TRAFFIC
      }
}
