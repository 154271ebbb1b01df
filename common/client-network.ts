import { isIPv4, isIPv6 } from 'node:net'

/**
 * The network a client address is counted under by per-IP limits. An IPv4 address is
 * its own (also when written IPv4-mapped, `::ffff:192.0.2.1`, so that one client is
 * one bucket whichever way a proxy wrote it). An IPv6 address counts as its /64: one
 * subscriber or host usually holds a whole /64, so counting single addresses would
 * give one attacker 2^64 buckets.
 */
export function clientNetwork (address: string): string {
  const plain = address.replace(/%.*$/, '') // a zone index (fe80::1%eth0) names an interface, not a client
  if (isIPv4(plain)) return plain
  if (!isIPv6(plain)) return address
  const groups = expandIPv6(plain.toLowerCase())
  const mapped = groups.slice(0, 6).join(':') === '0:0:0:0:0:ffff'
  if (mapped) return [groups[6], groups[7]].map((g) => parseInt(g as string, 16)).flatMap((n) => [n >> 8, n & 0xff]).join('.')
  return `${groups.slice(0, 4).join(':')}::/64`
}

/** The eight groups of an IPv6 address, without leading zeros (an embedded IPv4 tail converted). */
function expandIPv6 (address: string): string[] {
  let text = address
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (v4 !== null) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number]
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.split('::') as [string, string | undefined]
  const left = head === '' ? [] : head.split(':')
  const right = tail === undefined || tail === '' ? [] : tail.split(':')
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0')
  return [...left, ...zeros, ...right].map((group) => parseInt(group, 16).toString(16))
}
