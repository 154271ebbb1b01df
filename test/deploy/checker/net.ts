/** IPv4 helpers for the fixed addresses compose.yaml trusts as proxies. */
function toNumber (ip: string): number | null {
  const parts = ip.split('.').map(Number)
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) return null
  return parts.reduce((n, p) => n * 256 + p, 0)
}

export function inCidr (ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split('/')
  const a = toNumber(ip)
  const b = toNumber(base ?? '')
  const size = 2 ** (32 - Number(bits))
  if (a === null || b === null || !Number.isInteger(size)) return false
  return Math.floor(a / size) === Math.floor(b / size)
}

/** `host:port` of a URL or an address, or null. */
const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443, 'redis:': 6379, 'rediss:': 6379 }

export function hostPort (address: string): { host: string, port: number } | null {
  try {
    const url = new URL(address.includes('://') ? address : `tcp://${address}`)
    const port = url.port !== '' ? Number(url.port) : DEFAULT_PORTS[url.protocol]
    return port === undefined ? null : { host: url.hostname, port }
  } catch {
    return null
  }
}
