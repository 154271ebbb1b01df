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
 * ARGV holds five values per key: kind (`r` rate, `q` quota), limit, the window (ms)
 * or the quota period's end (ms since the epoch), cost, and a quota's seed (-1:
 * unknown). A rate key is the sliding window's ring (common/traffic/sliding-window.ts):
 * a 4-byte head, then 8 bytes (a double) per unit. A quota key is the period's count,
 * expiring when the period ends.
 *
 * Answers {-1, i…} when quota keys i… are missing and have no seed (nothing taken);
 * otherwise {all, then per key: fits, remaining, ms until reset, ms until retry}.
 */
const TAKE_SCRIPT = `
local now = tonumber(ARGV[#ARGV])
if now == 0 then
  local clock = redis.call('TIME')
  now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
end
local n = #KEYS
local function unit(key, limit, head, offset)
  local i = (head + offset) % limit
  local raw = redis.call('GETRANGE', key, 4 + i * 8, 11 + i * 8)
  if #raw < 8 then return 0 end
  return (struct.unpack('>d', raw))
end
local heads, fits, unseeded = {}, {}, {}
local all = 1
for i = 1, n do
  local b = (i - 1) * 5
  local limit, span, cost = tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4])
  if ARGV[b + 1] == 'r' then
    local raw = redis.call('GETRANGE', KEYS[i], 0, 3)
    local head = 0
    if #raw == 4 then head = (struct.unpack('>I4', raw)) end
    heads[i] = head
    fits[i] = cost == 0 or (cost <= limit and unit(KEYS[i], limit, head, cost - 1) + span <= now)
  else
    local used = redis.call('GET', KEYS[i])
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
  local b = (i - 1) * 5
  local key = KEYS[i]
  local limit, span, cost = tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4])
  local fit = 0
  if fits[i] then fit = 1 end
  if ARGV[b + 1] == 'r' then
    local head = heads[i]
    if all == 1 and cost > 0 then
      local stamp = struct.pack('>d', now)
      for k = 0, cost - 1 do
        redis.call('SETRANGE', key, 4 + ((head + k) % limit) * 8, stamp)
      end
      head = (head + cost) % limit
      redis.call('SETRANGE', key, 0, struct.pack('>I4', head))
      redis.call('PEXPIRE', key, span)
    end
    local low, high = 0, limit
    while low < high do
      local middle = math.floor((low + high) / 2)
      if unit(key, limit, head, middle) + span <= now then low = middle + 1 else high = middle end
    end
    local reset = 0
    if low < limit then reset = unit(key, limit, head, low) + span - now end
    local retry = 0
    if not fits[i] then
      if cost > limit then retry = span else retry = unit(key, limit, head, cost - 1) + span - now end
    end
    out[#out + 1] = fit
    out[#out + 1] = low
    out[#out + 1] = reset
    out[#out + 1] = retry
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
  end
end
return out
`

const KEY_PREFIX = 'portier:tc:'

/** A Cluster hash tag may not hold braces; the tag is a partition's name, so this never merges two. */
const tagOf = (tag: string): string => tag.replace(/[{}]/g, '_')

interface TakingClient { portierTrafficTake: (keyCount: number, ...args: Array<string | number>) => Promise<number[]> }

/**
 * Counts shared by every gateway through Redis (standalone or Cluster). A request's
 * checks are grouped by partition (tag); each group is one script call, all groups
 * sent at once. Within a group the take is all or nothing; across groups, a group
 * that fits is taken even when another refuses (the caller orders its groups so that
 * this only ever charges a client's own counts).
 */
export function createRedisCounters (redis: RedisClient, options: { deadlineMs?: number, now?: () => number } = {}): CounterStore {
  redis.defineCommand('portierTrafficTake', { lua: TAKE_SCRIPT })
  const keyOf = (check: CounterCheck): string =>
    // A quota's key names its period: a gateway whose clock passed the period's end before Redis's must not carry the old count into the new period.
    `${KEY_PREFIX}{${tagOf(check.tag)}}${check.id}${check.policy.kind === 'quota' ? `@${check.periodStart}` : ''}`
  const client = redis as unknown as TakingClient

  async function takeGroup (checks: readonly CounterCheck[]): Promise<CounterResult[]> {
    const keys: string[] = []
    const args: Array<string | number> = []
    for (const check of checks) {
      keys.push(keyOf(check))
      if (check.policy.kind === 'rate') args.push('r', check.policy.limit, check.policy.window_seconds * 1000, check.cost, -1)
      else args.push('q', check.policy.limit, check.periodEnd, check.cost, check.seed ?? -1)
    }
    args.push(options.now?.() ?? 0)
    let answer: number[]
    try {
      answer = await withinDeadline(client.portierTrafficTake(keys.length, ...keys, ...args), options.deadlineMs)
    } catch (err) {
      throw new CountersUnavailableError('redis did not answer the traffic counters', { cause: err })
    }
    if (answer[0] === -1) throw new SeedNeededError(answer.slice(1).map((i) => checks[i - 1] as CounterCheck))
    return checks.map((_check, i): CounterResult => {
      const at = 1 + i * 4
      const fits = answer[at] === 1
      return {
        allowed: answer[0] === 1,
        remaining: answer[at + 1] as number,
        resetSeconds: ceilSeconds(answer[at + 2] as number),
        retryAfterSeconds: fits ? 0 : ceilSeconds(answer[at + 3] as number, 1)
      }
    })
  }

  return {
    async take (checks) {
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
    },

    async forget (checks) {
      try {
        // One key per call: the keys of several partitions may live on several Cluster nodes.
        await withinDeadline(Promise.all(checks.map(async (check) => await redis.del(keyOf(check)))), options.deadlineMs)
      } catch (err) {
        throw new CountersUnavailableError('redis did not answer the traffic counters', { cause: err })
      }
    }
  }
}
