import type { BenchSettings } from './report/types.js'

export interface RunSettings extends BenchSettings {
  warmupSeconds: number
  flood: { unknown: number, wrongSecret: number }
  mockUsers: number
}

/**
 * Full: every figure a median of 6 rounds of 3 s, about 14 minutes on 2 cores: some
 * 30 variants over the scenarios, so rounds are shorter and fewer than a handful of
 * variants would allow (many short rounds follow a noisy machine's swings better than
 * a few long ones). Quick: the same scenarios in 2 rounds of 1 s, no warm-up run per
 * variant and fewer keys (fewer in traffic than the gateway's L1 holds), under 2
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
        mockUsers: 1_000
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
        mockUsers: 1_000
      }
}
