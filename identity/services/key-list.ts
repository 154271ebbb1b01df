import type { Static } from 'typebox'
import type { KeyListQuery } from '../schemas.js'
import type { KeyListFilter, KeyListStatus } from '../store/key-list-filter.js'

const DAY_MS = 86_400_000

/** A key hygiene query as operators ask it (the admin API's `GET /admin/keys` filters, `portier keys list`). */
export interface KeyListCriteria {
  ownerUserId?: string
  status?: KeyListStatus
  /** Expiring within this many days from now (not yet expired). */
  expiringWithinDays?: number
  /** Not used for this many days: last used, or created if never used, longer ago. */
  idleDays?: number
  neverExpires?: boolean
}

/** The criteria as the store's instants, at `now`. */
export function keyListFilter (criteria: KeyListCriteria, now: number): KeyListFilter {
  return {
    ...(criteria.ownerUserId !== undefined ? { ownerUserId: criteria.ownerUserId } : {}),
    ...(criteria.status !== undefined ? { status: criteria.status } : {}),
    ...(criteria.expiringWithinDays !== undefined ? { expiringBy: now + criteria.expiringWithinDays * DAY_MS } : {}),
    ...(criteria.idleDays !== undefined ? { idleSince: now - criteria.idleDays * DAY_MS } : {}),
    ...(criteria.neverExpires !== undefined ? { neverExpires: criteria.neverExpires } : {})
  }
}

/** The admin API's query (and the CLI's options, checked against the same schema) as criteria. */
export function keyListCriteriaOf (query: Static<typeof KeyListQuery>): KeyListCriteria {
  return {
    ...(query.owner !== undefined ? { ownerUserId: query.owner } : {}),
    ...(query.status !== undefined ? { status: query.status } : {}),
    ...(query.expiring_within_days !== undefined ? { expiringWithinDays: query.expiring_within_days } : {}),
    ...(query.idle_days !== undefined ? { idleDays: query.idle_days } : {}),
    ...(query.never_expires !== undefined ? { neverExpires: query.never_expires } : {})
  }
}
