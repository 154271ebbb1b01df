import { LRUCache } from 'lru-cache'
import type { RedisClient } from '../redis.js'
import { withinDeadline } from '../redis.js'
import { ceilSeconds, CountersUnavailableError, SeedNeededError, type CounterCheck, type CounterResult, type CounterStore } from './counter.js'

/**
 * The counts of one partition, checked and taken atomically in one round trip. Every
 * key of a call carries the same hash tag, so on a Redis Cluster they share a slot.
 * Time is Redis's own (TIME), so replicas with skewed clocks still share one window,
 * unless the caller keeps its own clock (a single writer such as identity, whose
 * clock its tests control): then the last ARGV is its time in ms (0: Redis's).
 *
 * ARGV holds six values per key: kind (`r` rate, `q` quota), limit, the window (ms)
 * or the quota period's end (ms since the epoch), cost, a quota's seed (-1: unknown),
 * and the batch of units a rate key may also hand out (0: none). A rate key is the sliding window's ring (common/traffic/sliding-window.ts):
 * a 4-byte head and a 4-byte count of the units still in the window, then 8 bytes (a
 * double) per unit. Keeping that count, units that left the window are dropped from
 * the oldest as they expire (amortised one look per unit taken) instead of searching
 * the ring on every call: a take is a handful of commands whatever the limit. A quota
 * key is the period's count, expiring when the period ends.
 *
 * Answers {-1, i…} when quota keys i… are missing and have no seed (nothing taken);
 * otherwise {all, then per key: fits, remaining, ms until reset, ms until retry, units batched}.
 */
const TAKE_SCRIPT = `
local now = tonumber(ARGV[#ARGV])
if now == 0 then
  local clock = redis.call('TIME')
  now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
end
local n = #KEYS
-- The time of the unit in ring slot i (0 for a slot never written: long gone).
local function unit(key, i)
  local raw = redis.call('GETRANGE', key, 8 + i * 8, 15 + i * 8)
  if #raw < 8 then return 0 end
  return (struct.unpack('>d', raw))
end
local heads, counts, fits, unseeded, granted = {}, {}, {}, {}, {}
local all = 1
for i = 1, n do
  local b = (i - 1) * 6
  local key = KEYS[i]
  local limit, span, cost = tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4])
  if ARGV[b + 1] == 'r' then
    local raw = redis.call('GETRANGE', key, 0, 7)
    local head, inside = 0, 0
    if #raw == 8 then head, inside = struct.unpack('>I4I4', raw) end
    -- The units in the window are the inside newest, oldest first from head - inside: drop those that left it.
    while inside > 0 and unit(key, (head - inside) % limit) + span <= now do inside = inside - 1 end
    heads[i] = head
    counts[i] = inside
    fits[i] = cost <= limit - inside
  else
    local used = redis.call('GET', key)
    if used then
      used = tonumber(used)
    elseif tonumber(ARGV[b + 5]) >= 0 then
      used = tonumber(ARGV[b + 5])
    else
      unseeded[#unseeded + 1] = i
      used = 0
    end
    heads[i] = used
    fits[i] = used + cost <= limit
  end
  if not fits[i] then all = 0 end
end
if #unseeded > 0 then
  table.insert(unseeded, 1, -1)
  return unseeded
end
local out = { all }
for i = 1, n do
  local b = (i - 1) * 6
  local key = KEYS[i]
  local limit, span, cost = tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4])
  local fit = 0
  if fits[i] then fit = 1 end
  if ARGV[b + 1] == 'r' then
    local head, inside = heads[i], counts[i]
    if all == 1 and cost > 0 then
      -- The cost's slots from head, in at most two runs (the ring may wrap).
      local stamp = struct.pack('>d', now)
      local first = math.min(cost, limit - head)
      redis.call('SETRANGE', key, 8 + head * 8, string.rep(stamp, first))
      if cost > first then redis.call('SETRANGE', key, 8, string.rep(stamp, cost - first)) end
      head = (head + cost) % limit
      inside = inside + cost
      -- A batch for the caller to spend on its own, only while more than half the limit is left after it.
      local batch = tonumber(ARGV[b + 6])
      if batch > 0 and limit - inside - batch >= limit / 2 then
        local firstRun = math.min(batch, limit - head)
        redis.call('SETRANGE', key, 8 + head * 8, string.rep(stamp, firstRun))
        if batch > firstRun then redis.call('SETRANGE', key, 8, string.rep(stamp, batch - firstRun)) end
        head = (head + batch) % limit
        inside = inside + batch
        granted[i] = batch
      end
      redis.call('SETRANGE', key, 0, struct.pack('>I4I4', head, inside))
      redis.call('PEXPIRE', key, span)
    elseif inside ~= counts[i] then
      redis.call('SETRANGE', key, 0, struct.pack('>I4I4', head, inside))
    end
    local reset = 0
    if inside > 0 then reset = unit(key, (head - inside) % limit) + span - now end
    local retry = 0
    if not fits[i] then
      if cost > limit then
        retry = span
      else
        -- The units that must leave the window first: the oldest cost - (limit - inside) of those in it.
        retry = unit(key, (head - inside + cost - (limit - inside) - 1) % limit) + span - now
      end
    end
    out[#out + 1] = fit
    out[#out + 1] = limit - inside
    out[#out + 1] = reset
    out[#out + 1] = retry
    out[#out + 1] = granted[i] or 0
  else
    local used = heads[i]
    if all == 1 and cost > 0 then
      used = used + cost
      redis.call('SET', key, used, 'PXAT', span)
    end
    local retry = 0
    if not fits[i] then retry = span - now end
    out[#out + 1] = fit
    out[#out + 1] = math.max(0, limit - used)
    out[#out + 1] = span - now
    out[#out + 1] = retry
    out[#out + 1] = 0
  end
end
return out
`

const KEY_PREFIX = 'portier:tc:'

/** A Cluster hash tag may not hold braces; the tag is a partition's name, so this never merges two. */
const tagOf = (tag: string): string => tag.replace(/[{}]/g, '_')

interface TakingClient { portierTrafficTake: (keyCount: number, ...args: Array<string | number>) => Promise<number[]> }

/**
 * Batches, for rate limits of at least BATCH_MIN_LIMIT units: while more than half of
 * the limit is left, a take also takes limit / BATCH_DIVISOR units (at most
 * BATCH_MAX) that this process spends on its own for up to BATCH_LIFETIME_MS, so most
 * requests under a large limit need no round trip. The units are stamped when taken,
 * so a window may hold up to one batch per gateway more, or (a batch left unspent)
 * less, than the limit; below BATCH_MIN_LIMIT, and once half the limit is used,
 * every unit is counted in Redis, exactly. A partition gets a batch only when it asked
 * Redis again within a batch's life: a key that sends a request now and then would
 * leave every batch unspent.
 */
export const BATCH_MIN_LIMIT = 10_000
const BATCH_DIVISOR = 1_000
const BATCH_MAX = 100
const BATCH_LIFETIME_MS = 200
const BATCH_PARTITIONS = 100_000

/** Units of a batch not spent yet, and what Redis said when it handed them out. */
interface Batch { units: number, until: number, remaining: number, resetSeconds: number }

const batchSizeOf = (check: CounterCheck): number =>
  check.policy.kind === 'rate' && check.policy.limit >= BATCH_MIN_LIMIT ? Math.min(BATCH_MAX, Math.floor(check.policy.limit / BATCH_DIVISOR)) : 0

/**
 * Counts shared by every gateway through Redis (standalone or Cluster). A request's
 * checks are grouped by partition (tag); each group is one script call, all groups
 * sent at once. Within a group the take is all or nothing; across groups, a group
 * that fits is taken even when another refuses (the caller orders its groups so that
 * this only ever charges a client's own counts).
 */
export function createRedisCounters (redis: RedisClient, options: { deadlineMs?: number, now?: () => number, batches?: boolean } = {}): CounterStore {
  redis.defineCommand('portierTrafficTake', { lua: TAKE_SCRIPT })
  const keyOf = (check: CounterCheck): string =>
    // A quota's key names its period: a gateway whose clock passed the period's end before Redis's must not carry the old count into the new period.
    `${KEY_PREFIX}{${tagOf(check.tag)}}${check.id}${check.policy.kind === 'quota' ? `@${check.periodStart}` : ''}`
  const client = redis as unknown as TakingClient
  // Bounded: a flood of distinct keys cannot grow them.
  const batches = new LRUCache<string, Batch>({ max: BATCH_PARTITIONS })
  /** When each partition last asked Redis: only one asked again within a batch's life is worth a batch. */
  const lastAsked = new LRUCache<string, number>({ max: BATCH_PARTITIONS })
  const batchFor = (check: CounterCheck, at: number): number => {
    const size = batchSizeOf(check)
    if (size === 0) return 0
    const last = lastAsked.get(check.id)
    lastAsked.set(check.id, at)
    return last !== undefined && at - last < BATCH_LIFETIME_MS ? size : 0
  }
  // A batch's life is this process's own business: its own clock, whoever keeps the window's.
  const clock = Date.now

  /** The answers from this process's batches, when every check has one with room (taken then), else null. */
  function fromBatches (checks: readonly CounterCheck[]): CounterResult[] | null {
    if (options.batches !== true) return null
    const at = clock()
    for (const check of checks) {
      const batch = batches.get(check.id)
      if (batch === undefined || batch.until <= at || batch.units < check.cost) return null
    }
    return checks.map((check) => {
      const batch = batches.get(check.id) as Batch
      batch.units -= check.cost
      return { allowed: true, remaining: batch.remaining + batch.units, resetSeconds: batch.resetSeconds, retryAfterSeconds: 0 }
    })
  }

  /** Takes on their way to Redis that may bring a batch, by check id. */
  const refills = new Map<string, Promise<unknown>>()
  const refillOf = (checks: readonly CounterCheck[]): Promise<unknown> | undefined => {
    for (const check of checks) {
      const refill = refills.get(check.id)
      if (refill !== undefined) return refill
    }
    return undefined
  }

  function keepBatch (check: CounterCheck, units: number, result: CounterResult): void {
    if (units > 0) batches.set(check.id, { units, until: clock() + BATCH_LIFETIME_MS, remaining: result.remaining, resetSeconds: result.resetSeconds })
    else batches.delete(check.id)
  }

  async function takeGroup (checks: readonly CounterCheck[]): Promise<CounterResult[]> {
    const keys: string[] = []
    const args: Array<string | number> = []
    /** The checks this take asks a batch for: requests that find theirs empty meanwhile wait for it. */
    const batched: CounterCheck[] = []
    for (const check of checks) {
      keys.push(keyOf(check))
      if (check.policy.kind === 'rate') {
        const batch = options.batches === true ? batchFor(check, clock()) : 0
        if (batch > 0 && !refills.has(check.id)) batched.push(check)
        args.push('r', check.policy.limit, check.policy.window_seconds * 1000, check.cost, -1, batch)
      } else {
        args.push('q', check.policy.limit, check.periodEnd, check.cost, check.seed ?? -1, 0)
      }
    }
    args.push(options.now?.() ?? 0)
    const call = withinDeadline(client.portierTrafficTake(keys.length, ...keys, ...args), options.deadlineMs)
    if (batched.length > 0) {
      const settled = call.then(() => {}, () => {})
      for (const check of batched) refills.set(check.id, settled)
      void settled.then(() => { for (const check of batched) if (refills.get(check.id) === settled) refills.delete(check.id) })
    }
    let answer: number[]
    try {
      answer = await call
    } catch (err) {
      throw new CountersUnavailableError('redis did not answer the traffic counters', { cause: err })
    }
    if (answer[0] === -1) throw new SeedNeededError(answer.slice(1).map((i) => checks[i - 1] as CounterCheck))
    return checks.map((check, i): CounterResult => {
      const at = 1 + i * 5
      const fits = answer[at] === 1
      const result = {
        allowed: answer[0] === 1,
        remaining: answer[at + 1] as number,
        resetSeconds: ceilSeconds(answer[at + 2] as number),
        retryAfterSeconds: fits ? 0 : ceilSeconds(answer[at + 3] as number, 1)
      }
      if (options.batches === true && check.policy.kind === 'rate') keepBatch(check, answer[at + 4] as number, result)
      return result
    })
  }

  return {
    take (checks) {
      const spent = fromBatches(checks)
      if (spent !== null) return spent
      // Requests that find their batch empty while a take that will refill it is on its way wait for that one.
      const refill = options.batches === true ? refillOf(checks) : undefined
      if (refill !== undefined) return refill.then(() => fromBatches(checks) ?? takeAll(checks))
      return takeAll(checks)
    },

    async forget (checks) {
      for (const check of checks) batches.delete(check.id)
      try {
        // One key per call: the keys of several partitions may live on several Cluster nodes.
        await withinDeadline(Promise.all(checks.map(async (check) => await redis.del(keyOf(check)))), options.deadlineMs)
      } catch (err) {
        throw new CountersUnavailableError('redis did not answer the traffic counters', { cause: err })
      }
    }
  }

  async function takeAll (checks: readonly CounterCheck[]): Promise<CounterResult[]> {
    const groups = new Map<string, CounterCheck[]>()
    for (const check of checks) {
      const group = groups.get(check.tag)
      if (group === undefined) groups.set(check.tag, [check])
      else group.push(check)
    }
    if (groups.size === 1) return await takeGroup(checks)
    const answers = new Map<CounterCheck, CounterResult>()
    const settled = await Promise.all([...groups.values()].map(async (group) => ({ group, results: await takeGroup(group) })))
    const allowed = settled.every(({ results }) => results.every((result) => result.allowed))
    for (const { group, results } of settled) {
      group.forEach((check, i) => { answers.set(check, { ...(results[i] as CounterResult), allowed }) })
    }
    return checks.map((check) => answers.get(check) as CounterResult)
  }
}
