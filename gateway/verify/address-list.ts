import { BlockList, isIP } from 'node:net'

/** `::ffff:10.0.0.1`, as a dual-stack listener reports an IPv4 peer, is that IPv4 address. */
export function plainAddress (address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address
}

/** A CIDR list (`10.0.0.0/8`, `::1/128`, or a single address) made once: a lookup per call. */
export interface AddressList {
  has: (address: string | undefined) => boolean
}

/** The entries of `cidrs` that are not an address or an address/prefix. */
export function addressListProblems (cidrs: readonly string[]): string[] {
  return cidrs.filter((cidr) => {
    const [address = '', prefix, ...rest] = cidr.split('/')
    const family = isIP(address)
    if (family === 0 || rest.length > 0) return true
    if (prefix === undefined) return false
    const bits = /^[0-9]{1,3}$/.test(prefix) ? Number(prefix) : -1
    return bits < 0 || bits > (family === 4 ? 32 : 128)
  })
}

/** The list of `cidrs`, checked beforehand with addressListProblems. */
export function createAddressList (cidrs: readonly string[]): AddressList {
  const list = new BlockList()
  for (const cidr of cidrs) {
    const [address = '', prefix] = cidr.split('/')
    const type = isIP(address) === 4 ? 'ipv4' : 'ipv6'
    if (prefix === undefined) list.addAddress(address, type)
    else list.addSubnet(address, Number(prefix), type)
  }
  return {
    has (address) {
      if (address === undefined) return false
      const plain = plainAddress(address)
      const family = isIP(plain)
      return family !== 0 && list.check(plain, family === 4 ? 'ipv4' : 'ipv6')
    }
  }
}
