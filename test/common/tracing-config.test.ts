import t from 'tap'
import { spawnSync } from 'node:child_process'
import { loadGatewayConfig } from '../../gateway/config.js'
import { loadIdentityConfig } from '../../identity/config.js'
import { configProblems } from '../helpers/config-problems.js'
import { nodeCommand } from '../helpers/node-command.js'
import { repoPath } from '../helpers/repo-root.js'
import { WITH_SIGNING_KEY_ENCRYPTION } from '../helpers/signing-key-encryption.js'

/**
 * The OTEL_* variables, read through each service's one config schema: off unless
 * OTEL_TRACES_EXPORTER=otlp, and a bad one fails the start naming it.
 */

const GATEWAY = { IDENTITY_SERVICE_TOKEN: 's'.repeat(40) }
const IDENTITY = { IDENTITY_ADMIN_TOKEN: 'a'.repeat(32), IDENTITY_SERVICE_TOKEN: 's'.repeat(32), ...WITH_SIGNING_KEY_ENCRYPTION }
const LOADERS = [
  ['gateway', (env: Record<string, string>) => loadGatewayConfig({ ...GATEWAY, ...env }).tracing],
  ['identity', (env: Record<string, string>) => loadIdentityConfig({ ...IDENTITY, ...env }).tracing]
] as const

t.test('off by default; on with otlp, every setting read', async (t) => {
  for (const [service, load] of LOADERS) {
    t.equal(load({}), null, `${service}: off when OTEL_TRACES_EXPORTER is unset`)
    t.equal(load({ OTEL_TRACES_EXPORTER: 'none' }), null, `${service}: off with none`)
    t.match(load({ OTEL_TRACES_EXPORTER: 'otlp' }), {
      serviceName: `portier-${service}`,
      url: 'http://localhost:4318/v1/traces',
      protocol: 'http/protobuf',
      timeoutMs: 10_000,
      sampler: 'parentbased_always_on',
      ratio: 1,
      maxQueueSize: 2048,
      scheduleDelayMs: 5000,
      maxExportBatchSize: 512
    }, `${service}: the specification's defaults`)
    t.same(load({
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://collector.example:4318/',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_TIMEOUT: '2500',
      OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20abc, x-tenant = blue',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.1',
      OTEL_SERVICE_NAME: 'edge',
      OTEL_BSP_MAX_QUEUE_SIZE: '100',
      OTEL_BSP_SCHEDULE_DELAY: '200',
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '50'
    }), {
      serviceName: 'edge',
      url: 'https://collector.example:4318/v1/traces',
      protocol: 'http/json',
      headers: { authorization: 'Bearer abc', 'x-tenant': 'blue' },
      timeoutMs: 2500,
      sampler: 'parentbased_traceidratio',
      ratio: 0.1,
      maxQueueSize: 100,
      scheduleDelayMs: 200,
      maxExportBatchSize: 50
    }, `${service}: every variable read`)
    t.equal(load({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/custom' })?.url, 'http://c:4318/custom',
      `${service}: the traces endpoint is used as given`)
    t.equal(load({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' })?.protocol, 'http/protobuf',
      `${service}: the traces protocol wins over the general one`)
  }
})

t.test('a bad setting is a problem naming its variable, never showing a credential', async (t) => {
  const bad: Array<[Record<string, string>, RegExp]> = [
    [{ OTEL_TRACES_EXPORTER: 'jaeger' }, /^OTEL_TRACES_EXPORTER: must be one of none, otlp$/],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, /^OTEL_EXPORTER_OTLP_PROTOCOL: must be one of http\/protobuf, http\/json$/],
    [{ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/xml' }, /^OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: must be one of http\/protobuf, http\/json$/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' }, /^OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:\/\/ or https:\/\/ URL$/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://user:hunter2@collector' }, /^OTEL_EXPORTER_OTLP_ENDPOINT: must be an http/],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '://x' }, /^OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: /],
    [{ OTEL_EXPORTER_OTLP_HEADERS: 'no-equals-sign' }, /^OTEL_EXPORTER_OTLP_HEADERS: must be name=value pairs/],
    [{ OTEL_EXPORTER_OTLP_TIMEOUT: 'soon' }, /^OTEL_EXPORTER_OTLP_TIMEOUT: /],
    [{ OTEL_TRACES_SAMPLER: 'sometimes' }, /^OTEL_TRACES_SAMPLER: must be one of /],
    [{ OTEL_TRACES_SAMPLER_ARG: '1.5' }, /^OTEL_TRACES_SAMPLER_ARG: must be <= 1$/],
    [{ OTEL_TRACES_SAMPLER_ARG: '-0.1' }, /^OTEL_TRACES_SAMPLER_ARG: must be >= 0$/],
    [{ OTEL_BSP_MAX_QUEUE_SIZE: 'lots' }, /^OTEL_BSP_MAX_QUEUE_SIZE: must be integer$/],
    [{ OTEL_BSP_SCHEDULE_DELAY: '-1' }, /^OTEL_BSP_SCHEDULE_DELAY: /],
    [{ OTEL_BSP_MAX_QUEUE_SIZE: '10', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '20' }, /^OTEL_BSP_MAX_EXPORT_BATCH_SIZE: must be at most OTEL_BSP_MAX_QUEUE_SIZE \(10\)$/]
  ]
  for (const [service, load] of LOADERS) {
    for (const [env, expected] of bad) {
      // Checked whether tracing is on or not: turning it on later must not reveal a mistake made now.
      const problems = configProblems(() => load({ OTEL_TRACES_EXPORTER: 'otlp', ...env }))
      t.equal(problems.length, 1, `${service}: ${JSON.stringify(env)} is one problem`)
      t.match(problems[0], expected, `${service}: ${JSON.stringify(env)} names its variable`)
      t.notOk(problems.join('\n').includes('hunter2'), `${service}: no credential shown`)
    }
  }
})

t.test('the servers refuse to start on a bad exporter setting (exit 78, EX_CONFIG)', async (t) => {
  for (const [server, env] of [['gateway', GATEWAY], ['identity', IDENTITY]] as const) {
    const run = spawnSync(...nodeCommand([repoPath(`dist/${server}/server.js`)]), {
      env: { PATH: process.env.PATH, ...env, OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER_ARG: '2' }, encoding: 'utf8'
    })
    t.equal(run.status, 78, `${server}: exit 78`)
    t.match(run.stderr, /OTEL_TRACES_SAMPLER_ARG: must be <= 1/, `${server}: naming the variable`)
  }
})
