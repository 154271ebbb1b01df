/**
 * The bodies the static upstream answers: users pages in the mock's snake_case style,
 * built once at start so that answering costs the upstream nothing but the write.
 */

export const PAGE_SIZES = ['1k', '7k', '30k'] as const
export type PageSize = typeof PAGE_SIZES[number]

/** The size the throughput scenarios use unless they say otherwise: a 50-user page. */
export const DEFAULT_PAGE_SIZE: PageSize = '7k'

const TARGET_BYTES: Record<PageSize, number> = { '1k': 1024, '7k': 7 * 1024, '30k': 30 * 1024 }

const FIRST_NAMES = ['ada', 'grace', 'alan', 'edsger', 'barbara', 'donald', 'frances', 'ken', 'margaret', 'dennis']
const LAST_NAMES = ['lovelace', 'hopper', 'turing', 'dijkstra', 'liskov', 'knuth', 'allen', 'thompson', 'hamilton', 'ritchie']

/** A small user record: several multi-word keys per user, so inflection has work to do. */
function user (id: number): Record<string, unknown> {
  const first = FIRST_NAMES[id % FIRST_NAMES.length] as string
  const last = LAST_NAMES[Math.floor(id / FIRST_NAMES.length) % LAST_NAMES.length] as string
  return {
    id,
    first_name: first,
    last_name: last,
    email_address: `${first}.${last}${id}@example.com`,
    is_active: id % 7 !== 0,
    created_at: new Date(Date.UTC(2024, 0, 1 + (id % 365))).toISOString().slice(0, 10)
  }
}

function page (count: number): string {
  const users = Array.from({ length: count }, (_, i) => user(i + 1))
  return JSON.stringify({ users, meta: { page: 1, per_page: count, total_count: count } })
}

/** The page whose length is closest to `targetBytes` (at least one user); the same bytes on every call. */
export function usersPageNear (targetBytes: number): Buffer {
  let best = Buffer.from(page(1))
  for (let count = 2; ; count++) {
    const next = Buffer.from(page(count))
    if (Math.abs(next.length - targetBytes) >= Math.abs(best.length - targetBytes)) return best
    best = next
  }
}

export function pageOfSize (size: PageSize): Buffer {
  return usersPageNear(TARGET_BYTES[size])
}
