import type { LoadRun } from '../report/types.js'

/** What one load run sends; wrk runs it when it can (load/wrk.ts), else the autocannon worker process. */
export interface LoadJob {
  url: string
  method: 'GET' | 'POST'
  headers: Record<string, string>
  body?: string
  connections: number
  durationSeconds: number
  /** Send this many requests instead of running for `durationSeconds` (a warm-up pass). */
  amount?: number
  /**
   * Each request carries one of these values in header `name`, picked at random
   * (or in turn, `sequential`): traffic over many API keys. With one value it costs
   * the client the same per request as with many.
   */
  rotateHeader?: { name: string, values: string[], sequential?: boolean }
  /**
   * Refresh chains: `POST /tokens` (Bearer access token, refresh token in the body)
   * rotates the set, so each request sends a live set and its answer's set is sent
   * next. At least one per connection.
   */
  refreshTokens?: TokenSet[]
  /**
   * Run by autocannon even when wrk is there: the scenario reads the answers by status
   * code (wrk counts only "≥ 400"), or compares this job with one only autocannon runs.
   */
  autocannonOnly?: boolean
  /** A WebSocket echo run (load/websocket.ts): each connection sends this message and waits for its echo, again and again. */
  websocketMessage?: string
}

export interface TokenSet { access_token: string, refresh_token: string }

/** A run's numbers plus answers by status code (what scenarios check). */
export interface LoadOutcome extends LoadRun {
  statusCounts: Record<string, number>
  totalRequests: number
}
