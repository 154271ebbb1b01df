/**
 * The shape of `bench/results/<date>.json`: everything the Markdown table, the SVG
 * chart and the README summary are drawn from. One file per run; nothing else is read.
 */

/** One load run of one variant (wrk's or autocannon's summary, reduced). */
export interface LoadRun {
  requestsPerSecond: number
  p50Ms: number
  p99Ms: number
  /** Answers outside 2xx: a scenario that expects 2xx treats any as a harness error. */
  non2xx: number
  errors: number
  timeouts: number
  /**
   * CPU time the proxy (node floor, bare proxy, nginx, gateway: the process and its
   * descendants) spent per answered request, in µs, from /proc: a cost the machine's
   * noise moves much less than throughput. Absent where no proxy runs (direct).
   */
  proxyCpuMicrosPerRequest?: number
}

/** A process under test or a baseline, measured in every round of its scenario. */
export interface VariantResult {
  /** Stable id, e.g. `bare`, `gateway-key`, `nginx`. */
  id: string
  /** What a reader sees, e.g. "gateway, API key". */
  label: string
  role: 'baseline' | 'candidate' | 'reference'
  rounds: LoadRun[]
  /** Median of each field over the rounds. */
  median: LoadRun
  /**
   * Median over the rounds of this variant's req/s ÷ the node floor's in the same
   * round, when the node floor ran in the same rotation: how close to what a Node
   * proxy can do on this machine at all.
   */
  floorRatio?: number
}

/**
 * Least direct ÷ bare-proxy throughput for a scenario's figures to be judged: below
 * it, the upstream or the load generator, not the proxies, sets the pace.
 */
export const MIN_HEADROOM = 3

export interface Target {
  /** The target as stated, e.g. "≥ 0.90 × bare proxy; p99 ≤ bare p99 + 1 ms". */
  description: string
  /** Variant id the ratio is taken against. */
  against: string
  /** Least throughput ratio candidate / against; absent: reported only. */
  minThroughputRatio?: number
  /** Largest p99 excess over `against`, in ms; absent: not a target. */
  maxP99ExcessMs?: number
  /** Largest CPU µs per request ratio candidate / against; absent: not a target. */
  maxCpuRatio?: number
}

export interface ScenarioResult {
  id: string
  title: string
  /** What the load sends: method, path, credential, concurrency. */
  request: string
  variants: VariantResult[]
  /** Candidate variant id whose ratio the target judges. */
  candidate: string
  target: Target
  /** Median over the rounds of candidate req/s / against req/s, each round's pair measured back to back. */
  throughputRatio: number
  /** Median over the rounds of candidate p99 - against p99, in ms. */
  p99ExcessMs: number
  /** Median over the rounds of candidate CPU µs/request ÷ against's; NaN where either has no proxy CPU. */
  cpuRatio: number
  /** Median over the rounds of direct req/s ÷ bare-proxy req/s; null when the scenario ran neither. */
  headroom: number | null
  /** false: headroom below MIN_HEADROOM, the figures say nothing about the proxies and are not judged. */
  valid: boolean
  /** null: reported without a pass/fail target, or not judged (invalid). */
  met: boolean | null
  notes: string[]
}

/** One cell of the rewriter micro-benchmark: a body (shape × size) renamed to one style. */
export interface MicroResult {
  /** Body size label: "1 KB", "100 KB", "10 MB". */
  size: string
  /** Body shape: "narrow" (upstream-mock's users page) or "40-key records". */
  shape: string
  bytes: number
  /** Key style the body was renamed to, e.g. "camel". */
  style: string
  /** JSON.parse of the body's text, decoded beforehand: MB/s of input. */
  parseMBps: number
  /** JSON.parse(buffer.toString()), decoding included: MB/s of input, shown, not judged. */
  decodeParseMBps: number
  /** new JsonKeyRewriter(table).rewriteAll(buffer): MB/s of input. */
  rewriteMBps: number
  /** Rewriter MB/s ÷ JSON.parse MB/s, median of the per-round ratios; target ≥ 1.0. */
  ratio: number
  met: boolean
}

/** The longest synchronous stretch while a large body is renamed chunk by chunk, as the gateway streams it. */
export interface EventLoopBlockResult {
  bodyBytes: number
  chunkBytes: number
  /** Bodies streamed (every shape × style), and pushes over all of them. */
  passes: number
  pushes: number
  /** The longest single push (one chunk renamed), in ms; target ≤ maxBlockMs. */
  longestPushMs: number
  /** Median push, in ms. */
  medianPushMs: number
  /** The most CPU time (the process's, GC threads included) one push took, in ms: tells a long push from one that waited for a core; shown, not judged. */
  longestPushCpuMs: number
  /** monitorEventLoopDelay over the same passes (1 ms resolution): its max and p99, in ms; shown, not judged. */
  loopDelayMaxMs: number
  loopDelayP99Ms: number
  maxBlockMs: number
  met: boolean
}

/** RSS of a process that streams a large body through one rewriter, output discarded. */
export interface StreamMemoryResult {
  bodyBytes: number
  chunkBytes: number
  style: string
  rssBeforeMiB: number
  rssPeakMiB: number
  rssFinalMiB: number
  /** max(peak, final) − before, in MiB; target ≤ maxGrowthMiB. */
  growthMiB: number
  /** Heap in use + Buffers after a full collection at the end, minus before: what the stream left behind; shown, not judged. */
  retainedMiB: number
  maxGrowthMiB: number
  met: boolean
}

export interface InflectionStreamResult {
  eventLoop: EventLoopBlockResult
  memory: StreamMemoryResult
}

export interface FloodResult {
  /** Distinct well-formed keys cycled by the flood; `unknownIds` of them with lookup ids identity does not know. */
  distinctKeys: number
  unknownIds: number
  durationSeconds: number
  requestsPerSecond: number
  /** Every flood answer must be 401; anything else is counted here. */
  non401: number
  identityVerificationsPerSecond: number
  argon2VerificationsPerSecond: number
  /** What the negative cache allows: distinct keys per negative-cache TTL, per second (first sight of each included). */
  allowedVerificationsPerSecond: number
  /** Identity's CPU time over the flood divided by its wall time (1 = one core). */
  identityCpuCores: number
  met: boolean
}

export interface IdentityRates {
  loginsPerSecond: number
  refreshesPerSecond: number
  /** refreshes / logins; target ≥ 20. */
  ratio: number
  argon2: { memoryKiB: number, timeCost: number, parallelism: number }
  met: boolean
}

export interface MemoryResult {
  warmupRssMiB: number
  finalRssMiB: number
  peakRssMiB: number
  /** final / warm-up; target ≤ 1.2. */
  ratio: number
  met: boolean
}

export interface MachineInfo {
  cpuModel: string
  cores: number
  memoryGiB: number
  os: string
  node: string
  redis: string
  nginx: string | null
}

export interface BenchSettings {
  mode: 'quick' | 'full'
  durationSeconds: number
  rounds: number
  connections: number
  keysInIdentity: number
  distinctKeysInTraffic: number
  /** What sent the throughput scenarios' load, e.g. "wrk 4.1.0, 1 thread" or "autocannon". */
  loadGenerator: string
}

export interface BenchResult {
  version: 2
  startedAt: string
  finishedAt: string
  machine: MachineInfo
  settings: BenchSettings
  /** Against the static upstream: the proxies are the bottleneck, the targets are judged. */
  scenarios: ScenarioResult[]
  /** Against upstream-mock, which builds every page: what a client would see, reported without targets. */
  realistic: ScenarioResult[]
  micro: MicroResult[]
  /** The rewriter streaming a large body: event-loop block and RSS growth; null when it did not run. */
  inflectionStream: InflectionStreamResult | null
  flood: FloodResult | null
  identity: IdentityRates | null
  memory: MemoryResult | null
  /** One line per part that did not run, saying why (e.g. nginx absent). */
  skipped: string[]
}
