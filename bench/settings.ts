import type { BenchSettings } from './report/types.js'

export interface RunSettings extends BenchSettings {
  warmupSeconds: number
  flood: { unknown: number, wrongSecret: number }
  mockUsers: number
}

/**
 * Full: every figure a median of 10 rounds of 4 s, about 11 minutes on 2 cores (many
 * short rounds follow a noisy machine's swings better than a few long ones).
 * Quick: the same scenarios in 2 rounds of 1.5 s and fewer keys, under 2 minutes: a
 * smoke run, its numbers noisier.
 */
export function defaultSettings (quick: boolean): RunSettings {
  return quick
    ? {
        mode: 'quick',
        durationSeconds: 1.5,
        rounds: 2,
        warmupSeconds: 0.5,
        connections: 10,
        keysInIdentity: 20_000,
        distinctKeysInTraffic: 12_000,
        flood: { unknown: 1_000, wrongSecret: 20 },
        mockUsers: 1_000
      }
    : {
        mode: 'full',
        durationSeconds: 4,
        rounds: 10,
        warmupSeconds: 2,
        connections: 10,
        keysInIdentity: 100_000,
        distinctKeysInTraffic: 20_000,
        flood: { unknown: 2_000, wrongSecret: 100 },
        mockUsers: 1_000
      }
}
