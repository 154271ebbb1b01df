import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import { Cluster, Redis } from 'ioredis'
import type { Teardown } from './temp.js'
import { freePort, type TestRedis } from './redis.js'

const run = promisify(execFile)

/**
 * A real Redis Cluster of three masters and no replicas, private to one test file:
 * each master can be killed (its slots are then down: nothing fails over) and
 * restarted on the same port with the same node id, which rejoins with its slots.
 */
export interface TestRedisCluster extends TestRedis {
  /** `127.0.0.1:port` of each master, in start order. */
  nodes: string[]
  /** The environment that points a Portier process at this cluster. */
  env: { REDIS_CLUSTER_NODES: string }
  /** SIGKILLs one master (its data is gone: nothing is persisted). */
  kill: (index: number) => Promise<void>
  /** Starts a killed master again and waits until the cluster is whole. */
  restartNode: (index: number) => Promise<void>
  /** `cluster_state` as each running master reports it (`unreachable` for a dead one). */
  states: () => Promise<string[]>
  /** Which master serves `key` (its index), from the cluster itself. */
  nodeOf: (key: string) => Promise<number>
  /** How many subscribed connections (pub/sub) each master has (null for a dead one). */
  subscribersOnEachNode: () => Promise<Array<number | null>>
  /** How many keys matching `pattern` each master holds (null for a dead one). */
  countOnEachNode: (pattern: string) => Promise<Array<number | null>>
  /** A cluster client for the test's own reads (opened on first use, closed at teardown). */
  client: () => Cluster
}

/** Node timeout: a dead master is declared failed (cluster_state:fail) after about this long. */
export const CLUSTER_NODE_TIMEOUT_MS = 1_000
const START_TIMEOUT_MS = 20_000

async function nodeClient<T> (port: number, use: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, commandTimeout: 1_000 })
  client.on('error', () => {}) // a node that is down or starting: the caller decides
  try {
    await client.connect()
    return await use(client)
  } finally {
    client.disconnect()
  }
}

async function clusterState (port: number): Promise<string> {
  try {
    const info = await nodeClient(port, async (c) => await c.cluster('INFO'))
    return /cluster_state:(\w+)/.exec(info)?.[1] ?? 'unknown'
  } catch {
    return 'unreachable'
  }
}

async function waitFor (what: string, probe: () => Promise<boolean>, timeoutMs = START_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!await probe()) {
    if (Date.now() > deadline) throw new Error(`redis cluster: ${what} within ${timeoutMs} ms`)
    await sleep(50)
  }
}

export async function startRedisCluster (t: Teardown): Promise<TestRedisCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'portier-redis-cluster-'))
  const ports = [await freePort(), await freePort(), await freePort()]
  // Each node's cluster bus port too: by default it is the port + 10000, which nobody checked was free.
  const busPorts = [await freePort(), await freePort(), await freePort()]
  const children: Array<ChildProcess | null> = ports.map(() => null)

  const spawnNode = async (index: number): Promise<void> => {
    const port = ports[index] as number
    children[index] = spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--loglevel', 'warning',
      '--cluster-enabled', 'yes', '--cluster-port', String(busPorts[index]), '--cluster-config-file', join(dir, `nodes-${port}.conf`),
      '--cluster-node-timeout', String(CLUSTER_NODE_TIMEOUT_MS), '--dir', dir
    ], { stdio: 'ignore' })
    await waitFor(`node ${port} answering`, async () => await clusterState(port) !== 'unreachable')
  }
  const kill = async (index: number): Promise<void> => {
    const child = children[index] ?? null
    children[index] = null
    if (child === null || child.exitCode !== null || child.signalCode !== null) return
    const exited = once(child, 'exit')
    child.kill('SIGKILL')
    await exited
  }
  const states = async (): Promise<string[]> => await Promise.all(ports.map(clusterState))
  const whole = async (): Promise<void> => {
    await waitFor('cluster_state:ok on every master', async () => (await states()).every((s) => s === 'ok'))
  }

  let client: Cluster | null = null
  // One teardown, in this order: the servers write their nodes files until they are gone.
  t.teardown(async () => {
    client?.disconnect()
    await Promise.all(ports.map(async (_port, i) => { await kill(i) }))
    rmSync(dir, { recursive: true, force: true })
  })
  await Promise.all(ports.map(async (_port, i) => { await spawnNode(i) }))
  const nodes = ports.map((port) => `127.0.0.1:${port}`)
  await run('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', '0', '--cluster-yes'], { timeout: START_TIMEOUT_MS })
  await whole()

  return {
    url: `redis://${nodes[0] as string}`,
    private: true,
    nodes,
    env: { REDIS_CLUSTER_NODES: nodes.join(',') },
    kill,
    restartNode: async (index) => { await spawnNode(index); await whole() },
    states,
    async nodeOf (key) {
      const alive = ports.filter((_port, i) => children[i] !== null)
      const { slot, ranges } = await nodeClient(alive[0] as number, async (c) => ({ slot: await c.cluster('KEYSLOT', key), ranges: await c.cluster('SLOTS') }))
      const owner = ranges.find(([from, to]) => slot >= from && slot <= to)
      return ports.indexOf(owner?.[2]?.[1] ?? -1)
    },
    subscribersOnEachNode: async () => await Promise.all(ports.map(async (port, i) => {
      if (children[i] === null) return null
      const clients = await nodeClient(port, async (c) => await c.client('LIST') as string)
      return clients.split('\n').filter((line) => / sub=[1-9]/.test(line)).length
    })),
    countOnEachNode: async (pattern) => await Promise.all(ports.map(async (port, i) => {
      if (children[i] === null) return null
      return await nodeClient(port, async (c) => {
        let count = 0
        for await (const batch of c.scanStream({ match: pattern, count: 500 })) count += (batch as string[]).length
        return count
      })
    })),
    client: () => {
      client ??= new Cluster(ports.map((port) => ({ host: '127.0.0.1', port })))
      return client
    },
    stop: async () => { await Promise.all(ports.map(async (_port, i) => { await kill(i) })) },
    restart: async () => {
      await Promise.all(ports.map(async (_port, i) => { if (children[i] === null) await spawnNode(i) }))
      await whole()
    }
  }
}
