import { cpuSecondsOf } from '../processes/proc-stats.js'
import { scrape, sumOf } from '../processes/prometheus.js'
import { median } from '../rounds.js'
import type { FloodResult } from '../report/types.js'
import { unknownKeys, wrongSecretsFor } from '../seed.js'
import { staticUsersPath } from '../upstreams.js'
import type { BenchContext } from './context.js'

interface IdentityCounters { verifications: number, argon2: number, cpuSeconds: number }

/**
 * A flood of invalid but well-formed keys (valid checksums): random lookup ids, which
 * identity refuses from its index, and real lookup ids with wrong secrets, which cost
 * identity a SHA-256 check (argon2 only for a key stored before SHA-256, bounded per
 * lookup id). The gateway's negative cache must hold identity to one verification per
 * distinct key per TTL, however fast the flood comes.
 */
export async function flood (ctx: BenchContext, sizes: { unknown: number, wrongSecret: number }): Promise<FloodResult> {
  const { stack } = ctx
  const keys = [...unknownKeys(sizes.unknown), ...wrongSecretsFor(stack.accounts.apiKey, sizes.wrongSecret)]
  const counters = async (): Promise<IdentityCounters> => {
    const samples = await scrape(`${stack.identityAdminUrl}/metrics`, stack.serviceToken)
    return {
      verifications: sumOf(samples, 'portier_identity_key_verifications_total'),
      argon2: sumOf(samples, 'portier_identity_argon2_operations_total', { operation: 'verify', purpose: 'api_key' }),
      cpuSeconds: cpuSecondsOf(stack.identity.pid)
    }
  }
  ctx.say(`invalid-key flood: ${keys.length.toLocaleString('en')} distinct keys (${sizes.wrongSecret} with a real lookup id and a wrong secret)`)
  const seconds = ctx.rounds.durationSeconds
  const perRound: Array<{ rps: number, verifications: number, argon2: number, allowed: number, allowedArgon2: number, cpu: number, non401: number }> = []
  const ttl = stack.settings.negativeTtlSeconds
  for (let round = 0; round < ctx.rounds.rounds; round++) {
    const before = await counters()
    const startedAt = process.hrtime.bigint()
    const outcome = await ctx.driver.run({
      url: stack.gateway.url + staticUsersPath(), method: 'GET', headers: {}, connections: ctx.connections, durationSeconds: seconds, rotateHeader: { name: 'x-api-key', values: keys }, autocannonOnly: true
    })
    const wall = Number(process.hrtime.bigint() - startedAt) / 1e9
    const after = await counters()
    // Each distinct key may reach identity once per negative TTL: at most this many times in `wall` seconds.
    const windows = Math.floor(wall / ttl) + 1
    const measured = {
      rps: outcome.requestsPerSecond,
      verifications: (after.verifications - before.verifications) / wall,
      argon2: (after.argon2 - before.argon2) / wall,
      allowed: keys.length * windows / wall,
      allowedArgon2: sizes.wrongSecret * windows / wall,
      cpu: (after.cpuSeconds - before.cpuSeconds) / wall,
      non401: Object.entries(outcome.statusCounts).filter(([s]) => s !== '401').reduce((n, [, c]) => n + c, 0)
    }
    perRound.push(measured)
    ctx.say(`  round ${round + 1}/${ctx.rounds.rounds}: ${Math.round(measured.rps).toLocaleString('en')} req/s, identity ${measured.verifications.toFixed(1)} verifications/s and ${measured.argon2.toFixed(1)} argon2/s (allowed ${measured.allowed.toFixed(1)} and ${measured.allowedArgon2.toFixed(1)}), ${measured.cpu.toFixed(2)} cores`)
  }
  const non401 = perRound.reduce((n, r) => n + r.non401, 0)
  return {
    distinctKeys: keys.length,
    unknownIds: sizes.unknown,
    durationSeconds: seconds,
    requestsPerSecond: median(perRound.map((r) => r.rps)),
    non401,
    identityVerificationsPerSecond: median(perRound.map((r) => r.verifications)),
    argon2VerificationsPerSecond: median(perRound.map((r) => r.argon2)),
    allowedVerificationsPerSecond: median(perRound.map((r) => r.allowed)),
    identityCpuCores: median(perRound.map((r) => r.cpu)),
    met: non401 === 0 && perRound.every((r) => r.verifications <= r.allowed && r.argon2 <= r.allowedArgon2)
  }
}
