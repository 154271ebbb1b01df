import { Option, type Command } from 'commander'
import {
  ConcurrencyPolicySchema, QUOTA_PERIODS, QuotaPolicySchema, RatePolicySchema, TrafficPolicies, policyListProblems,
  type QuotaPeriod, type TrafficPolicy
} from '../common/traffic/policy.js'
import { checked } from './input.js'
import { UsageError } from './io.js'

/**
 * Traffic policies on the command line, one `--policy` each, in a compact form:
 * `NAME:KIND:LIMIT[/WINDOW]:PARTITION[:open|closed]`. The window of a rate is a
 * duration (`10s`, `5m`, `1h`, `1d`), that of a quota its period (minute, hour, day,
 * month or never); a concurrency cap has none. Each policy is then checked against
 * the admin API's own schema, so the CLI accepts exactly what the API accepts.
 */

export const POLICY_SPEC_FORMAT = 'NAME:KIND:LIMIT[/WINDOW]:PARTITION[:open|closed]'
const EXAMPLES = 'e.g. burst:rate:100/10s:key, monthly:quota:10000/month:user or inflight:concurrency:5:key'
const WINDOW_UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3_600, d: 86_400 }

/** One `--policy` value as a policy, or a UsageError naming the option, the value and what is wrong. */
export function parsePolicySpec (spec: string, option = '--policy'): TrafficPolicy {
  const label = `${option} ${JSON.stringify(spec)}`
  const refuse = (why: string): never => { throw new UsageError(`${label}: ${why}; write ${POLICY_SPEC_FORMAT}, ${EXAMPLES}`) }
  const parts = spec.split(':')
  if (parts.length < 4 || parts.length > 5) refuse(`expected 4 or 5 parts separated by ":", found ${parts.length}`)
  const [name, kind, amount, partition, onLoss] = parts as [string, string, string, string, string | undefined]
  const [limitText, window, ...rest] = amount.split('/') as [string, string | undefined, ...string[]]
  if (rest.length > 0) refuse(`"${amount}" has more than one "/"`)
  if (!/^\d{1,16}$/.test(limitText)) refuse(`the limit "${limitText}" is not a whole number`)
  const common = { name, limit: Number(limitText), partition, ...(onLoss !== undefined ? { on_redis_loss: onLoss } : {}) }
  switch (kind) {
    case 'rate': {
      const match = /^(\d{1,6})([smhd])$/.exec(window ?? '')
      if (match === null) {
        return refuse(window === undefined
          ? 'a rate needs a window after its limit, e.g. 100/10s'
          : `the window "${window}" is not a number and a unit (s, m, h or d), e.g. 10s or 1h`)
      }
      const windowSeconds = Number(match[1]) * (WINDOW_UNIT_SECONDS[match[2] as string] as number)
      return checked(RatePolicySchema, { ...common, kind, window_seconds: windowSeconds }, label)
    }
    case 'quota':
      if (window === undefined || !(QUOTA_PERIODS as readonly string[]).includes(window)) {
        return refuse(`a quota needs a period after its limit, one of ${QUOTA_PERIODS.join(', ')} (e.g. 10000/month)`)
      }
      return checked(QuotaPolicySchema, { ...common, kind, period: window as QuotaPeriod }, label)
    case 'concurrency':
      if (window !== undefined) refuse('a concurrency cap takes no window: it counts the requests in flight')
      if (onLoss !== undefined) refuse('a concurrency cap takes no :open or :closed: each gateway counts its own')
      return checked(ConcurrencyPolicySchema, { name, kind, limit: common.limit, partition }, label)
    default:
      return refuse(`the kind "${kind}" is not rate, quota or concurrency`)
  }
}

/** What `withPolicyOptions` adds to a command's options. */
export interface PolicyOptions {
  policy?: string[]
  /** false when `--no-policies` was given (commander's negated option). */
  policies?: boolean
}

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value]

/**
 * Adds a repeatable `--policy <spec>` and, when `clearable`, `--no-policies` (which
 * removes every policy; it cannot be given with `--policy`).
 */
export function withPolicyOptions (command: Command, clearable: boolean): Command {
  command.addOption(new Option('--policy <spec>', `a traffic policy, ${POLICY_SPEC_FORMAT} (repeat for several), ${EXAMPLES}`)
    .argParser(collect))
  if (clearable) command.addOption(new Option('--no-policies', 'remove every traffic policy').conflicts('policy'))
  return command
}

/**
 * The policies the options give: undefined when neither option was given (nothing to
 * change), [] for `--no-policies`. Two policies of one name, or more than one place
 * may hold, are refused naming the option.
 */
export function policiesFrom (options: PolicyOptions): TrafficPolicy[] | undefined {
  if (options.policies === false) return []
  if (options.policy === undefined) return undefined
  const specs = options.policy
  const policies = checked(TrafficPolicies, specs.map((spec) => parsePolicySpec(spec)), '--policy')
  const [twice] = policyListProblems(policies)
  if (twice !== undefined) {
    const index = Number(twice.split('/', 1)[0])
    throw new UsageError(`--policy ${JSON.stringify(specs[index])}: the name "${policies[index]?.name ?? ''}" is given twice; each policy needs its own name`)
  }
  return policies
}
