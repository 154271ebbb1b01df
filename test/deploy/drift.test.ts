import t from 'tap'
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TObject } from 'typebox'
import {
  checkAllClaimed, checkCompose, checkDockerfile, checkKubernetes, checkNoCommittedSecrets, checkReadme, checkShellScripts,
  DOCKERFILE, loadCodeFacts, loadDeployTree, MAKE_SECRETS, parseDockerfile, Problems, README, REPO_ROOT,
  type CodeFacts
} from './checker/index.js'
import { composeDoc, edit, freshTree, reports, textOf, withFile } from './drift-helpers.js'

/**
 * Each check of deploy.test.ts, fed a drifted copy (in memory, or in a temporary copy
 * of deploy/), must report the drift with the file and place: proof that the checks
 * would catch it. The Kubernetes cases are in drift-kubernetes.test.ts.
 */
const facts = await loadCodeFacts()
t.teardown(() => facts.close())

const HAPROXY = 'deploy/compose/haproxy/haproxy.cfg'
const COMPOSE_UPSTREAMS = 'deploy/compose/gateway/upstreams.yaml'
const ENV_EXAMPLE = 'deploy/.env.example'

function dockerfileWith (from: string, to: string, tree = freshTree(), codeFacts: CodeFacts = facts): Problems {
  const problems = new Problems()
  checkDockerfile(tree, codeFacts, problems, parseDockerfile(edit(textOf(tree, DOCKERFILE), from, to)))
  return problems
}

function composeWith (change: (doc: Record<string, any>) => void, tree = freshTree(), codeFacts: CodeFacts = facts): Problems {
  const doc = composeDoc(tree)
  change(doc)
  const problems = new Problems()
  checkCompose(tree, codeFacts, problems, doc)
  return problems
}

function composeWithFile (path: string, from: string, to: string): Problems {
  const base = freshTree()
  const problems = new Problems()
  checkCompose(withFile(base, path, edit(textOf(base, path), from, to)), facts, problems)
  return problems
}

t.test('files: an unknown type, a file that does not parse and a file nothing checks are reported', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'portier-deploy-drift-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  const tree0 = freshTree()
  // Never copy the local secret files (if a developer has made them) into the temp copy.
  cpSync(join(REPO_ROOT, 'deploy'), join(root, 'deploy'), { recursive: true, filter: (src) => !tree0.localSecrets.some((p) => src.endsWith(p.slice('deploy'.length))) })
  writeFileSync(join(root, 'deploy/notes.txt'), 'remember the milk\n')
  writeFileSync(join(root, 'deploy/kubernetes/broken.yaml'), 'kind: [\n')
  writeFileSync(join(root, 'deploy/compose/notes.md'), '# notes\n')
  const problems = new Problems()
  const tree = loadDeployTree(root, problems)
  reports(t, problems, /^deploy\/notes\.txt: unknown file type/, 'an unknown file type')
  reports(t, problems, /^deploy\/kubernetes\/broken\.yaml: cannot be parsed as yaml/, 'a YAML syntax error')
  checkDockerfile(tree, facts, problems)
  checkCompose(tree, facts, problems)
  checkKubernetes(tree, facts, problems)
  checkShellScripts(tree, problems)
  checkReadme(tree, problems)
  checkAllClaimed(tree, problems)
  reports(t, problems, /^deploy\/compose\/notes\.md: not used by/, 'a file no check reads')
  reports(t, problems, /^deploy\/README\.md: does not mention compose\/notes\.md/, 'a file the README does not describe')
})

t.test('Dockerfile: user, stages, dependencies and the build', async (t) => {
  reports(t, dockerfileWith('USER node\n', ''), /^deploy\/Dockerfile: stage runtime: the final stage must switch to a non-root USER/, 'no USER')
  reports(t, dockerfileWith('USER node\n', 'USER root\n'), /line \d+: USER: the final stage must switch to a non-root USER/, 'USER root')
  reports(t, dockerfileWith('FROM node:20-bookworm-slim AS runtime', 'FROM node:22-bookworm-slim AS runtime'), /stages use different base images/, 'a runtime on another Node than the native build')
  reports(t, dockerfileWith('npm rebuild argon2 better-sqlite3', 'npm rebuild better-sqlite3'), /stage deps: argon2 has an install script/, 'a native module not rebuilt')
  reports(t, dockerfileWith('npm ci --omit=dev --ignore-scripts', 'npm ci --omit=dev'), /must use --ignore-scripts/, 'prepare would run tsc')
  reports(t, dockerfileWith('npm ci --omit=dev --ignore-scripts', 'npm ci --ignore-scripts'), /no stage runs `npm ci --omit=dev`/, 'dev dependencies in the runtime')
  reports(t, dockerfileWith('COPY --from=deps /app/node_modules ./node_modules\n', ''), /node_modules is not copied from the "deps" stage/, 'node_modules not copied')
  reports(t, dockerfileWith('COPY cli ./cli\n', ''), /stage build: "cli" is compiled by tsconfig\.build\.json but not copied/, 'a compiled folder missing from the build')
  reports(t, dockerfileWith('COPY package.json ./\n', ''), /\/app\/package\.json is not copied into the image \("type": "module"/, 'package.json missing at WORKDIR')
  reports(t, dockerfileWith('COPY gateway/upstreams.default.yaml ./gateway/upstreams.default.yaml', 'COPY gateway/upstreams.default.yaml ./'),
    /\/app\/gateway\/upstreams\.default\.yaml is not copied into the image \(the gateway's default GATEWAY_UPSTREAMS_FILE/, 'the default upstreams file at the wrong path')
  reports(t, dockerfileWith('COPY bin ./bin', 'COPY bin ./bin\nCOPY binaries ./binaries'), /line \d+: COPY: binaries does not exist in the repository/, 'a COPY of nothing')
  reports(t, dockerfileWith('RUN mkdir -p /data', 'RUN apt-get update && apt-get install -y g++ && mkdir -p /data'), /the final stage installs build tools/, 'a compiler in the final stage')
  const single = new Problems()
  checkDockerfile(freshTree(), facts, single, parseDockerfile('FROM node:20-bookworm-slim\nUSER node\nCMD ["node", "dist/gateway/server.js"]\n'))
  reports(t, single, /1 stage\(s\): the image must be multi-stage/, 'one stage')
})

t.test('Dockerfile: command, health check, ports, environment and build context', async (t) => {
  const cmd = dockerfileWith('CMD ["node", "dist/gateway/server.js"]', 'CMD ["node", "dist/gateway/main.js"]')
  reports(t, cmd, /line \d+: CMD: dist\/gateway\/main\.js: its source gateway\/main\.ts does not exist/, 'an entry point without a source')
  reports(t, cmd, /runs no Portier server/, 'an entry point that is no server')
  reports(t, dockerfileWith('CMD ["node", "dist/gateway/server.js"]', 'CMD node dist/gateway/server.js'), /needs a CMD in exec form/, 'shell-form CMD')
  reports(t, dockerfileWith('http://127.0.0.1:3000/readyz', 'http://127.0.0.1:3001/readyz'), /HEALTHCHECK: http:\/\/127\.0\.0\.1:3001\/readyz: gateway listens on 3000 \(http\), 9464 \(metrics\), not 3001/, 'a health check on the wrong port')
  reports(t, dockerfileWith('http://127.0.0.1:3000/readyz', 'http://127.0.0.1:3000/ready'), /HEALTHCHECK: gateway does not serve GET \/ready on its http listener/, 'a health check on a route nobody serves')
  reports(t, dockerfileWith('"dist/cli/healthcheck.js"', '"dist/cli/health.js"'), /expected \["node", "dist\/cli\/healthcheck\.js", "<url>"\]/, 'another health check script')
  reports(t, dockerfileWith('EXPOSE 3000 3001 4000', 'EXPOSE 3000 3001 3002 4000'), /EXPOSE: 3002 is a private listener \(admin\)/, "identity's admin port exposed")
  reports(t, dockerfileWith('EXPOSE 3000 3001 4000', 'EXPOSE 3000 3001 4000 9464'), /EXPOSE: 9464 is a private listener \(metrics\)/, "the gateway's metrics port exposed")
  reports(t, dockerfileWith('ENV GATEWAY_METRICS_HOST=0.0.0.0\n', ''), /CMD: gateway's metrics listener binds 127\.0\.0\.1: unreachable from other containers/, 'metrics on the container\'s loopback')
  reports(t, dockerfileWith('EXPOSE 3000 3001 4000', 'EXPOSE 3000 4000'), /EXPOSE: exposes \[3000,4000\]; the services' public listeners are \[3000,3001,4000\]/, 'a public port missing')
  reports(t, dockerfileWith('ENV NODE_ENV=production', 'ENV NODE_ENV=production\nENV GATEWAY_PROT=3000'), /GATEWAY_PROT is read by no Portier service/, 'an unknown variable')
  reports(t, dockerfileWith('ENV NODE_ENV=production', 'ENV NODE_ENV=production\nENV IDENTITY_ADMIN_TOKEN=x'), /IDENTITY_ADMIN_TOKEN: a credential must never be baked into the image/, 'a baked credential')
  const base = freshTree()
  const ignore = `${DOCKERFILE}.dockerignore`
  const problems = new Problems()
  checkDockerfile(withFile(base, ignore, edit(textOf(base, ignore), 'deploy/.env\n', '')), facts, problems)
  reports(t, problems, /^deploy\/Dockerfile\.dockerignore: "deploy\/\.env" must be excluded from the build context/, 'a secret file sent to the daemon')
  const hidden = new Problems()
  checkDockerfile(withFile(base, ignore, `${textOf(base, ignore)}bin\n`), facts, hidden)
  reports(t, hidden, /line \d+: COPY: bin is excluded from the build context by "bin"/, 'a COPY source filtered out of the context')
})

t.test('compose: environment against the env schemas and the config loaders', async (t) => {
  reports(t, composeWith((d) => { d.services['gateway-1'].environment.GATEWAY_PROT = '3000' }), /services\.gateway-1\.environment\.GATEWAY_PROT: GATEWAY_PROT is not read by gateway/, 'an unknown variable')
  reports(t, composeWith((d) => { d.services['gateway-1'].environment.IDENTITY_SERVICE_TOKEN = 'x'.repeat(40) }), /services\.gateway-1\.environment\.IDENTITY_SERVICE_TOKEN: IDENTITY_SERVICE_TOKEN is a credential/, 'a literal credential')
  // eslint-disable-next-line no-template-curly-in-string -- a compose interpolation, written as compose reads it
  reports(t, composeWith((d) => { d.services.identity.environment.IDENTITY_ADMIN_TOKEN = '${IDENTITY_ADMN_TOKEN:?set it}' }), /interpolate only as \$\{IDENTITY_ADMIN_TOKEN:\?message\}/, 'an interpolation of another name')
  reports(t, composeWith((d) => { delete d.services['gateway-2'].environment.IDENTITY_SERVICE_TOKEN }), /services\.gateway-2: IDENTITY_SERVICE_TOKEN is required by gateway and not set/, 'a required variable missing')
  reports(t, composeWith((d) => { d.services['gateway-1'].environment.GATEWAY_PORT = 'eighty' }), /services\.gateway-1: gateway refuses this environment: GATEWAY_PORT/, 'a value the loader refuses')
  reports(t, composeWith((d) => { delete d.services.identity.environment.IDENTITY_ADMIN_HOST }), /services\.identity: identity's admin listener binds 127\.0\.0\.1/, 'a loopback listener in a container')
  reports(t, composeWith((d) => { delete d.services['upstream-mock'].environment.UPSTREAM_MOCK_HOST }), /services\.upstream-mock: upstream-mock's http listener binds 127\.0\.0\.1/, "the mock's loopback default")
  reports(t, composeWith((d) => { delete d.services.identity.environment.REDIS_URL }), /services\.identity\.environment: REDIS_URL is not set/, 'Redis not configured')
  reports(t, composeWith((d) => { d.services['gateway-1'].command = ['node', 'dist/gateway/index.js'] }), /services\.gateway-1\.command: \["node","dist\/gateway\/index\.js"\] runs no Portier server/, 'a command that runs no server')
})

t.test('compose: ports, health checks, addresses and dependencies', async (t) => {
  const admin = composeWith((d) => { d.services.identity.environment.IDENTITY_ADMIN_PORT = '3003' })
  reports(t, admin, /services\.identity\.healthcheck\.test: http:\/\/127\.0\.0\.1:3002\/healthz: identity listens on 3001 \(public\), 3003 \(admin\), not 3002/, 'a health check on a port nobody listens on')
  reports(t, admin, /services\.gateway-1\.environment\.IDENTITY_INTERNAL_URL: http:\/\/identity:3002: identity listens on 3001, 3003, not 3002/, 'a URL to a port nobody listens on')
  reports(t, composeWith((d) => { d.services['gateway-1'].environment.IDENTITY_INTERNAL_URL = 'http://identity:3001' }),
    /IDENTITY_INTERNAL_URL: identity does not serve POST \/internal\/keys\/verify on its public listener \(port 3001\)/, 'the internal URL on the public listener')
  reports(t, composeWith((d) => { d.services['gateway-1'].environment.IDENTITY_PUBLIC_URL = 'http://identiti:3001' }), /http:\/\/identiti:3001: "identiti" is not a service of deploy\/compose\.yaml/, 'a URL to no service')
  reports(t, composeWith((d) => { d.services['gateway-1'].environment.REDIS_URL = 'redis://identity:3001' }), /redis:\/\/identity:3001: identity does not run redis/, 'REDIS_URL at identity')
  reports(t, composeWith((d) => { d.services['gateway-1'].healthcheck.test[3] = 'http://127.0.0.1:3000/ready' }), /services\.gateway-1\.healthcheck\.test: gateway does not serve GET \/ready/, 'a health path nobody serves')
  reports(t, composeWith((d) => { d.services['gateway-1'].healthcheck.test[3] = 'http://127.0.0.1:3000/healthz' }), /checks \/healthz; gateway is ready to serve when \/readyz answers 2xx/, 'liveness used as readiness')
  reports(t, composeWith((d) => { d.services['gateway-1'].healthcheck.test = ['CMD-SHELL', 'curl -f localhost:3000/readyz'] }), /use \["CMD", "node", "dist\/cli\/healthcheck\.js", "<url>"\]/, 'curl in a slim image')
  reports(t, composeWith((d) => { d.services.identity.ports = ['3002:3002'] }), /services\.identity\.ports: publishes \["3002:3002"\]: only the load balancer publishes a port; identity's admin listener must never be published/, 'the admin port published')
  reports(t, composeWith((d) => { d.services['upstream-mock'].environment.UPSTREAM_MOCK_PORT = '4001' }),
    /^deploy\/compose\/gateway\/upstreams\.yaml: upstreams\.backoffice\.target: http:\/\/upstream-mock:4000: upstream-mock listens on 4001, not 4000/, 'an upstream target on the wrong port')
  reports(t, composeWith((d) => { delete d.services['gateway-1'].depends_on.identity }), /services\.gateway-1\.depends_on: IDENTITY_PUBLIC_URL points at identity: wait for it with condition: service_healthy/, 'a missing dependency')
  const noCheck = composeWith((d) => { delete d.services.redis.healthcheck })
  reports(t, noCheck, /services\.redis\.healthcheck: every service needs a health check/, 'a service without a health check')
  reports(t, noCheck, /services\.identity\.depends_on\.redis: redis has no health check to wait for/, 'waiting on a health check that does not exist')
  reports(t, composeWith((d) => { d.services.identity.volumes = [] }), /services\.identity\.volumes: IDENTITY_DATABASE_PATH is in \/data: mount a named volume/, 'the database on the container layer')
  reports(t, composeWith((d) => { d.services.postgres = { image: 'postgres:16', healthcheck: { test: ['CMD', 'pg_isready'] } } }), /services\.postgres\.image: "postgres:16": .*teach/, 'an image the checker does not know')
  reports(t, composeWith((d) => { d.services['gateway-1'].build = { context: '.', dockerfile: 'deploy/Dockerfile' } }), /services\.gateway-1\.build\.context: the build context must be the repository root/, 'a wrong build context')
})

t.test('compose: replicas, the load balancer and trusted proxies', async (t) => {
  const one = composeWith((d) => {
    delete d.services['gateway-2']
    delete d.services.lb.depends_on['gateway-2']
  })
  reports(t, one, /services: 1 gateway service\(s\): run at least two replicas/, 'one gateway')
  reports(t, one, /haproxy\.cfg: line \d+: gateway-2:3000: "gateway-2" is not a service of deploy\/compose\.yaml/, 'a load balancer server that is gone')
  reports(t, composeWith((d) => { d.services.lb.ports = ['3000:8080'] }), /services\.lb\.ports: "3000:8080" publishes 8080; deploy\/compose\/haproxy\/haproxy\.cfg serves on 3000/, 'a published port HAProxy does not bind')
  reports(t, composeWith((d) => { d.services.identity.environment.IDENTITY_TRUST_PROXY = '172.30.80.10,172.30.80.11' }), /services\.identity\.environment\.IDENTITY_TRUST_PROXY: does not trust gateway-2 \(172\.30\.80\.12\)/, 'a gateway not trusted')
  reports(t, composeWith((d) => { d.services['gateway-1'].environment.GATEWAY_TRUST_PROXY = 'false' }), /services\.gateway-1\.environment\.GATEWAY_TRUST_PROXY: does not trust lb \(172\.30\.80\.10\)/, 'the load balancer not trusted')
  reports(t, composeWith((d) => { d.services['gateway-1'].networks.portier.ipv4_address = '172.30.80.200' }), /ipv4_address: 172\.30\.80\.200 can be handed to another container/, 'a fixed address in the dynamic range')
  reports(t, composeWith((d) => { d.services.lb.healthcheck.test[5] = 'http://127.0.0.1:8405/status' }), /services\.lb\.healthcheck\.test: http:\/\/127\.0\.0\.1:8405\/status: no frontend of .* monitor-uri \/status/, 'a balancer health check HAProxy does not answer')
  reports(t, composeWithFile(HAPROXY, 'uri /readyz', 'uri /healthz'), /haproxy\.cfg: line \d+: checked on \/healthz; a gateway is ready when \/readyz answers 2xx/, 'the balancer checks liveness')
  reports(t, composeWithFile(HAPROXY, 'uri /readyz', 'uri /ready'), /haproxy\.cfg: line \d+: gateway does not serve GET \/ready/, 'the balancer checks a route nobody serves')
  reports(t, composeWithFile(HAPROXY, '  http-check send meth GET uri /readyz\n', ''), /haproxy\.cfg: backend gateways: no HTTP health check/, 'no balancer health check')
  reports(t, composeWithFile(HAPROXY, 'server gateway-2 gateway-2:3000\n', ''), /haproxy\.cfg: the gateway service "gateway-2" is not a server of the load balancer/, 'a gateway left out')
  reports(t, composeWithFile(HAPROXY, 'gateway-1:3000', 'gateway-1:9464'), /haproxy\.cfg: line \d+: gateway-1:9464: the gateway's metrics listener is private; the load balancer sends traffic to its public listener/, 'traffic to the metrics port')
  reports(t, composeWith((d) => { d.services['gateway-1'].ports = ['9464:9464'] }), /services\.gateway-1\.ports: publishes \["9464:9464"\]: only the load balancer publishes a port/, 'the metrics port published')
  reports(t, composeWithFile(HAPROXY, 'gateway-1:3000', 'gateway-1:3001'), /haproxy\.cfg: line \d+: gateway-1:3001: gateway-1 listens on 3000, 9464, not 3001/, 'a server on the wrong port')
  reports(t, composeWithFile(HAPROXY, '  option forwardfor\n', ''), /haproxy\.cfg: "option forwardfor" is missing/, 'client IPs dropped')
  reports(t, composeWithFile(HAPROXY, 'bind :3000', 'bind :8080'), /services\.lb\.ports: "\$\{PORTIER_HTTP_PORT:-3000\}:3000" publishes 3000; .* serves on 8080/, 'HAProxy moved')
})

t.test('compose: the console, behind the gateways, trusted by identity', async (t) => {
  reports(t, composeWith((d) => {
    delete d.services.console
    for (const name of ['gateway-1', 'gateway-2']) {
      delete d.services[name].depends_on.console
      delete d.services[name].environment.GATEWAY_CONSOLE_URL
    }
  }), /^deploy\/compose\.yaml: services: none runs console \(node dist\/console\/server\.js\)/, 'the console left out')
  reports(t, composeWith((d) => { d.services.console.ports = ['3004:3004'] }),
    /services\.console\.ports: publishes \["3004:3004"\]: only the load balancer publishes a port; console's http listener must never be published/, 'the console published')
  reports(t, composeWith((d) => { d.services['gateway-1'].environment.GATEWAY_CONSOLE_URL = 'http://console:3000' }), /GATEWAY_CONSOLE_URL: http:\/\/console:3000: console listens on 3004, not 3000/, 'the console URL on the wrong port')
  reports(t, composeWith((d) => { delete d.services['gateway-2'].depends_on.console }), /services\.gateway-2\.depends_on: GATEWAY_CONSOLE_URL points at console: wait for it/, 'a gateway not waiting for the console')
  reports(t, composeWith((d) => { d.services.console.environment.CONSOLE_IDENTITY_ADMIN_URL = 'http://identity:3001' }),
    /services\.console\.environment\.CONSOLE_IDENTITY_ADMIN_URL: identity does not serve GET \/admin\/users on its public listener/, 'the admin URL led to the public listener')
  reports(t, composeWith((d) => { d.services.console.healthcheck.test[3] = 'http://127.0.0.1:3004/console/healthz' }), /services\.console\.healthcheck\.test: console does not serve GET \/console\/healthz/, 'a health path the console does not serve')
  reports(t, composeWith((d) => { d.services.console.environment.CONSOLE_TRUST_PROXY = '172.30.80.11,172.30.80.12' }), /services\.console\.environment\.CONSOLE_TRUST_PROXY: does not trust lb \(172\.30\.80\.10\)/, 'the load balancer not trusted by the console')
  reports(t, composeWith((d) => { d.services.identity.environment.IDENTITY_TRUST_PROXY = '172.30.80.10,172.30.80.11,172.30.80.12' }),
    /services\.identity\.environment\.IDENTITY_TRUST_PROXY: does not trust console \(172\.30\.80\.13\)/, 'the console not trusted by identity: every console login would count against one address')
})

t.test('compose: the upstreams file and the .env example', async (t) => {
  reports(t, composeWithFile(COMPOSE_UPSTREAMS, 'target: http://upstream-mock:4000', 'target: http://upstream-mock:4001'),
    /upstreams\.backoffice\.target: http:\/\/upstream-mock:4001: upstream-mock listens on 4000, not 4001/, 'a target on the wrong port')
  reports(t, composeWithFile(COMPOSE_UPSTREAMS, 'permission: users:list', 'permission: "Users List"'),
    /^deploy\/compose\/gateway\/upstreams\.yaml: the gateway refuses it: .*upstreams\[0\]\.routes\[0\]\.permission/, 'a file the gateway refuses')
  reports(t, composeWith((d) => { d.services['gateway-1'].environment.GATEWAY_UPSTREAMS_FILE = '/etc/routes/upstreams.yaml' }), /GATEWAY_UPSTREAMS_FILE: \/etc\/routes\/upstreams\.yaml is not inside a folder mounted from deploy\//, 'an upstreams file outside the mount')
  reports(t, composeWithFile(ENV_EXAMPLE, 'PORTIER_HTTP_PORT=3000\n', ''), /^deploy\/\.env\.example: PORTIER_HTTP_PORT is interpolated by deploy\/compose\.yaml and missing here/, 'a variable the example lacks')
  reports(t, composeWithFile(ENV_EXAMPLE, 'PORTIER_HTTP_PORT=3000\n', 'PORTIER_HTTP_PORT=3000\nPORTIER_UNUSED=1\n'), /^deploy\/\.env\.example: line \d+: PORTIER_UNUSED is not used by deploy\/compose\.yaml/, 'a stale example variable')
})

t.test('secrets: no literal credential in any file, examples empty, secret files ignored', async (t) => {
  const base = freshTree()
  const hex = 'a1'.repeat(32)
  const problems = new Problems()
  checkNoCommittedSecrets(withFile(base, ENV_EXAMPLE, edit(textOf(base, ENV_EXAMPLE), 'IDENTITY_ADMIN_TOKEN=\n', `IDENTITY_ADMIN_TOKEN=${hex}\n`)), problems)
  reports(t, problems, /^deploy\/\.env\.example: line \d+: IDENTITY_ADMIN_TOKEN: an example never holds a credential/, 'a filled-in example')
  reports(t, problems, /^deploy\/\.env\.example: line \d+: IDENTITY_ADMIN_TOKEN is given a literal value/, 'a literal credential')
  reports(t, problems, /^deploy\/\.env\.example: line \d+: "a1a1a1…" looks like key material/, 'key material')
  const readme = new Problems()
  checkNoCommittedSecrets(withFile(base, README, `${textOf(base, README)}\n    export IDENTITY_SERVICE_TOKEN="hunter2-is-not-a-token"\n`), readme)
  reports(t, readme, /^deploy\/README\.md: line \d+: IDENTITY_SERVICE_TOKEN is given a literal value/, 'a credential in the docs')
  const stray = new Problems()
  checkNoCommittedSecrets(withFile(base, README, `${textOf(base, README)}\nuse Zm9vYmFyQmF6UXV4MTIzNDU2Nzg5MGFiY2RlZg here\n`), stray)
  reports(t, stray, /looks like key material/, 'a base64 key anywhere')
  const ignore = new Problems()
  checkNoCommittedSecrets(base, ignore, 'node_modules/\ndeploy/.env\n')
  reports(t, ignore, /^\.gitignore: deploy\/kubernetes\/secrets\.env \(the filled-in secrets\.env\.example\) must be ignored/, 'a secret file not ignored')
})

t.test('the secret script and the README', async (t) => {
  const base = freshTree()
  const script = textOf(base, MAKE_SECRETS)
  const check = (text: string): Problems => {
    const p = new Problems()
    checkShellScripts(withFile(base, MAKE_SECRETS, text), p)
    return p
  }
  reports(t, check(edit(script, 'umask 077\n', '')), /^deploy\/make-secrets\.sh: umask 077/, 'world-readable secret files')
  reports(t, check(edit(script, 'set -euo pipefail\n', '')), /set -euo pipefail/, 'a script that goes on after a failure')
  reports(t, check(edit(script, 'generate "$here/kubernetes/secrets.env.example" "$here/kubernetes/secrets.env"\n', '')), /does not create deploy\/kubernetes\/secrets\.env from kubernetes\/secrets\.env\.example/, 'an example left out')
  reports(t, check(script.replaceAll('openssl rand -hex 32', 'date +%s')), /`openssl rand -hex 32`/, 'weak secrets')
  const readme = (text: string): Problems => {
    const p = new Problems()
    checkReadme(withFile(base, README, text), p)
    return p
  }
  reports(t, readme(textOf(base, README).replaceAll('network-policies.yaml', 'the policies')), /^deploy\/README\.md: does not mention kubernetes\/network-policies\.yaml/, 'a file left undocumented')
  reports(t, readme(textOf(base, README).replaceAll('Litestream', 'a backup tool')), /"Litestream"/, 'the backup note gone')
})

t.test('code changes the deploy files must follow are reported', async (t) => {
  // A route renamed in the gateway: every probe and check on it drifts.
  const noReadyz: CodeFacts = { ...facts, serves: (service, listener, method, path) => path !== '/readyz' && facts.serves(service, listener, method, path) }
  reports(t, composeWith(() => {}, freshTree(), noReadyz), /services\.gateway-1\.healthcheck\.test: gateway does not serve GET \/readyz/, 'compose health check')
  reports(t, dockerfileWith('EXPOSE', 'EXPOSE', freshTree(), noReadyz), /HEALTHCHECK: gateway does not serve GET \/readyz/, 'image health check')
  const k8s = new Problems()
  checkKubernetes(freshTree(), noReadyz, k8s)
  reports(t, k8s, /^deploy\/kubernetes\/gateway\.yaml: Deployment\/gateway\.spec\.template\.spec\.containers\[0\]\.readinessProbe\.httpGet: gateway does not serve GET \/readyz/, 'readiness probe')
  // A variable removed from a schema: every deploy file that sets it drifts.
  const withoutTrustProxy: CodeFacts = {
    ...facts,
    services: facts.services.map((s) => {
      if (s.name !== 'gateway') return s
      const { GATEWAY_TRUST_PROXY: _removed, ...properties } = s.schema.properties
      return { ...s, schema: { ...s.schema, properties } as unknown as TObject }
    })
  }
  reports(t, composeWith(() => {}, freshTree(), withoutTrustProxy), /services\.gateway-1\.environment\.GATEWAY_TRUST_PROXY: GATEWAY_TRUST_PROXY is not read by gateway/, 'compose env')
  const k8sEnv = new Problems()
  checkKubernetes(freshTree(), withoutTrustProxy, k8sEnv)
  reports(t, k8sEnv, /env\[GATEWAY_TRUST_PROXY\]: GATEWAY_TRUST_PROXY is not read by gateway/, 'Kubernetes env')
  // A new native dependency, a new compiled folder.
  reports(t, dockerfileWith('EXPOSE', 'EXPOSE', freshTree(), { ...facts, nativeModules: [...facts.nativeModules, 'sharp'] }), /sharp has an install script \(package-lock\.json\) and is not in `npm rebuild`/, 'a native module')
  reports(t, dockerfileWith('EXPOSE', 'EXPOSE', freshTree(), { ...facts, buildInclude: [...facts.buildInclude, 'bench'] }), /"bench" is compiled by tsconfig\.build\.json but not copied/, 'a compiled folder')
})
