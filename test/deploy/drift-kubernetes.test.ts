import t from 'tap'
import { checkKubernetes, KUSTOMIZATION, loadCodeFacts, Problems, readKubernetes, type KubernetesInput } from './checker/index.js'
import { cloneInput, container, edit, envVar, freshTree, manifest, reports, textOf, withFile } from './drift-helpers.js'

/**
 * The Kubernetes checks of deploy.test.ts, fed drifted copies of the base (objects
 * changed in memory, or a file's text): each drift must be reported with the file and
 * the place in the manifest.
 */
const facts = await loadCodeFacts()
t.teardown(() => facts.close())

const GATEWAY = 'deploy/kubernetes/gateway.yaml'
const K8S_UPSTREAMS = 'deploy/kubernetes/config/upstreams.yaml'
const SECRETS_EXAMPLE = 'deploy/kubernetes/secrets.env.example'

function baseWith (change: (input: KubernetesInput) => void): Problems {
  const tree = freshTree()
  const input = cloneInput(readKubernetes(tree, new Problems()))
  change(input)
  const problems = new Problems()
  checkKubernetes(tree, facts, problems, input)
  return problems
}

function fileWith (path: string, from: string, to: string): Problems {
  const base = freshTree()
  const problems = new Problems()
  checkKubernetes(withFile(base, path, edit(textOf(base, path), from, to)), facts, problems)
  return problems
}

const gateway = (input: KubernetesInput): Record<string, any> => container(input, 'Deployment', 'gateway')
const identity = (input: KubernetesInput): Record<string, any> => container(input, 'StatefulSet', 'identity')

t.test('kustomization: every manifest listed, secrets only from the gitignored env file', async (t) => {
  const dropped = fileWith(KUSTOMIZATION, '  - redis.yaml\n', '')
  reports(t, dropped, /^deploy\/kubernetes\/kustomization\.yaml: resources: redis\.yaml is in the folder but not listed/, 'a manifest left out')
  reports(t, dropped, /env\[REDIS_URL\]: redis:\/\/redis:6379: no Service "redis" in this base/, 'what then points nowhere')
  reports(t, fileWith(KUSTOMIZATION, '  - redis.yaml\n', '  - redis.yaml\n  - ingress.yaml\n'), /resources: ingress\.yaml: no such YAML file in deploy\/kubernetes/, 'a listed file that is missing')
  reports(t, baseWith((i) => { i.manifests.get(GATEWAY)?.push({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'leak' }, stringData: { IDENTITY_ADMIN_TOKEN: 'x' } }) }),
    /^deploy\/kubernetes\/gateway\.yaml: Secret\/leak: a committed Secret/, 'a committed Secret')
  reports(t, baseWith((i) => { i.kustomization.secretGenerator[0].literals = ['IDENTITY_ADMIN_TOKEN=x'] }), /secretGenerator\[0\] portier-secrets: secret values only from `envs`/, 'literal secret values')
  reports(t, fileWith(SECRETS_EXAMPLE, 'IDENTITY_ADMIN_TOKEN=\n', 'IDENTITY_ADMIN_TOKEN=\nIDENTITY_UNUSED_TOKEN=\n'), /secretGenerator portier-secrets: IDENTITY_UNUSED_TOKEN is in its \.example but no container reads it/, 'a stale secret key')
})

t.test('containers: commands, environment, secrets and ports', async (t) => {
  reports(t, baseWith((i) => { gateway(i).command = ['node', 'dist/gateway/app.js'] }), /Deployment\/gateway\.spec\.template\.spec\.containers\[0\]\.command: .* runs no Portier server/, 'a command that runs no server')
  reports(t, baseWith((i) => { gateway(i).env.push({ name: 'GATEWAY_PROT', value: '3000' }) }), /containers\[0\]\.env\[GATEWAY_PROT\]: GATEWAY_PROT is not read by gateway/, 'an unknown variable')
  reports(t, baseWith((i) => { Object.assign(envVar(gateway(i), 'IDENTITY_SERVICE_TOKEN'), { value: 'x'.repeat(40), valueFrom: undefined }) }),
    /env\[IDENTITY_SERVICE_TOKEN\]: IDENTITY_SERVICE_TOKEN is a credential/, 'a literal credential')
  reports(t, baseWith((i) => { envVar(identity(i), 'IDENTITY_ADMIN_TOKEN').valueFrom.secretKeyRef.key = 'IDENTITY_ADMIN_TOKN' }), /env\[IDENTITY_ADMIN_TOKEN\]: key IDENTITY_ADMIN_TOKN is not in the Secret's \.example file/, 'a secret key nobody fills')
  reports(t, baseWith((i) => { envVar(identity(i), 'IDENTITY_ADMIN_TOKEN').valueFrom.secretKeyRef.name = 'admin' }), /Secret "admin" is not made by kustomization\.yaml's secretGenerator/, 'a Secret nobody makes')
  reports(t, baseWith((i) => { gateway(i).env = gateway(i).env.filter((e: { name: string }) => e.name !== 'IDENTITY_SERVICE_TOKEN') }), /containers\[0\]: IDENTITY_SERVICE_TOKEN is required by gateway and not set/, 'a required variable missing')
  reports(t, baseWith((i) => { gateway(i).env = gateway(i).env.filter((e: { name: string }) => e.name !== 'REDIS_URL') }), /Deployment\/gateway.*\.env: REDIS_URL is not set/, 'Redis not configured')
  reports(t, baseWith((i) => {
    const mock = container(i, 'Deployment', 'upstream-mock')
    mock.env = mock.env.filter((e: { name: string }) => e.name !== 'UPSTREAM_MOCK_HOST')
  }),
  /Deployment\/upstream-mock.*: upstream-mock's http listener binds 127\.0\.0\.1/, "the mock's loopback default")
  reports(t, baseWith((i) => { gateway(i).envFrom = [{ secretRef: { name: 'portier-secrets' } }] }), /envFrom: list variables one by one/, 'names that cannot be checked')
  const port = baseWith((i) => { container(i, 'Deployment', 'upstream-mock').ports[0].containerPort = 4001 })
  reports(t, port, /Deployment\/upstream-mock\.spec\.template\.spec\.containers\[0\]\.ports: containerPort 4001: upstream-mock listens on 4000 \(http\)/, 'a containerPort nobody listens on')
  reports(t, port, /Service\/upstream-mock\.spec\.ports\[0\]: leads to 4001; the container listens on 4000/, 'a Service to a port nobody listens on')
  reports(t, baseWith((i) => { identity(i).ports.pop() }), /StatefulSet\/identity.*\.ports: identity's admin listener \(3002\) has no containerPort/, 'a listener without a containerPort')
})

t.test('probes, Services and URLs reach the right listener', async (t) => {
  reports(t, baseWith((i) => { gateway(i).readinessProbe.httpGet.path = '/healthz' }), /readinessProbe\.httpGet\.path: \/healthz: gateway is ready when \/readyz answers 2xx/, 'liveness used as readiness')
  reports(t, baseWith((i) => { gateway(i).livenessProbe.httpGet.path = '/alive' }), /livenessProbe\.httpGet: gateway does not serve GET \/alive on its http listener/, 'a probe on a route nobody serves')
  reports(t, baseWith((i) => { identity(i).livenessProbe.httpGet.port = 'metrics' }), /livenessProbe\.httpGet\.port: metrics is not a port identity listens on/, 'a probe on an unknown port')
  reports(t, baseWith((i) => { delete gateway(i).readinessProbe }), /containers\[0\]\.readinessProbe: missing/, 'no readiness probe')
  reports(t, baseWith((i) => { manifest(i, 'Service', 'identity-internal').spec.ports[0].targetPort = 'http' }),
    /env\[IDENTITY_INTERNAL_URL\]: identity does not serve POST \/internal\/keys\/verify on its public listener \(port 3001\)/, 'the internal URL led to the public listener')
  reports(t, baseWith((i) => { envVar(gateway(i), 'IDENTITY_INTERNAL_URL').value = 'http://identity-admin:3002' }), /http:\/\/identity-admin:3002: no Service "identity-admin" in this base/, 'a URL to no Service')
  reports(t, baseWith((i) => { envVar(gateway(i), 'IDENTITY_PUBLIC_URL').value = 'http://identity:3002' }), /http:\/\/identity:3002: Service identity has no port 3002 \(it has 3001\)/, 'a URL to a port the Service lacks')
  reports(t, baseWith((i) => { envVar(gateway(i), 'REDIS_URL').value = 'redis://upstream-mock:4000' }), /redis:\/\/upstream-mock:4000 leads to upstream-mock, not redis/, 'REDIS_URL at the mock')
  reports(t, baseWith((i) => { manifest(i, 'Service', 'redis').spec.selector = { 'app.kubernetes.io/name': 'cache' } }), /Service\/redis\.spec\.selector: selects 0 workloads/, 'a Service selecting nothing')
  reports(t, baseWith((i) => { manifest(i, 'Service', 'gateway').spec.ports[0].targetPort = 'https' }), /Service\/gateway\.spec\.ports\[0\]\.targetPort: https is no container port of Deployment\/gateway/, 'a targetPort that does not exist')
})

t.test('the gateways: replicas, autoscaling, disruption budget, drain, upstreams', async (t) => {
  reports(t, baseWith((i) => { manifest(i, 'Deployment', 'gateway').spec.replicas = 1 }), /Deployment\/gateway\.spec\.replicas: 1: run at least 2 gateways/, 'one gateway')
  reports(t, baseWith((i) => { manifest(i, 'HorizontalPodAutoscaler', 'gateway').spec.minReplicas = 1 }), /HorizontalPodAutoscaler\/gateway\.spec\.minReplicas: at least 2/, 'autoscaling down to one')
  reports(t, baseWith((i) => { manifest(i, 'HorizontalPodAutoscaler', 'gateway').apiVersion = 'autoscaling/v1' }), /HorizontalPodAutoscaler\/gateway: apiVersion autoscaling\/v1: use autoscaling\/v2/, 'an old HPA API')
  reports(t, baseWith((i) => { manifest(i, 'HorizontalPodAutoscaler', 'gateway').spec.scaleTargetRef.name = 'gateways' }), /Deployment\/gateway: no HorizontalPodAutoscaler scales it/, 'an HPA aimed elsewhere')
  reports(t, baseWith((i) => { manifest(i, 'PodDisruptionBudget', 'gateway').spec.selector.matchLabels = { app: 'gw' } }), /Deployment\/gateway: no PodDisruptionBudget covers its pods/, 'a PDB selecting nothing')
  reports(t, baseWith((i) => { manifest(i, 'Deployment', 'gateway').spec.template.spec.terminationGracePeriodSeconds = 12 }),
    /terminationGracePeriodSeconds: 12 s is not more than the preStop sleep \(5 s\) \+ GATEWAY_SHUTDOWN_GRACE_SECONDS \(10 s\)/, 'killed mid-drain')
  reports(t, baseWith((i) => { envVar(gateway(i), 'GATEWAY_SHUTDOWN_GRACE_SECONDS').value = '60' }), /is not more than the preStop sleep \(5 s\) \+ GATEWAY_SHUTDOWN_GRACE_SECONDS \(60 s\)/, 'a longer drain than the grace period')
  reports(t, baseWith((i) => { delete gateway(i).lifecycle }), /containers\[0\]\.lifecycle\.preStop: missing: sleep/, 'no preStop sleep')
  reports(t, baseWith((i) => { envVar(gateway(i), 'GATEWAY_UPSTREAMS_FILE').value = '/etc/portier/routes.yaml' }), /env\[GATEWAY_UPSTREAMS_FILE\]: \/etc\/portier\/routes\.yaml is not a key of a ConfigMap/, 'an upstreams file that is not mounted')
  reports(t, fileWith(K8S_UPSTREAMS, 'target: http://upstream-mock:4000', 'target: http://backoffice:4000'), /^deploy\/kubernetes\/config\/upstreams\.yaml: upstreams\.backoffice\.target: http:\/\/backoffice:4000: no Service "backoffice"/, 'an upstream target with no Service')
  reports(t, fileWith(K8S_UPSTREAMS, 'prefix: /', 'prefix: /admin'), /^deploy\/kubernetes\/config\/upstreams\.yaml: the gateway refuses it: /, 'a file the gateway refuses')
})

t.test('identity: one StatefulSet pod, its database on the claim, its admin port for its clients only', async (t) => {
  reports(t, baseWith((i) => { manifest(i, 'StatefulSet', 'identity').spec.replicas = 2 }), /StatefulSet\/identity\.spec\.replicas: 2: must be exactly 1 \(SQLite, single writer/, 'a second writer')
  reports(t, baseWith((i) => { manifest(i, 'StatefulSet', 'identity').kind = 'Deployment' }), /Deployment\/identity: SQLite has a single writer: run it as a StatefulSet/, 'a Deployment')
  reports(t, baseWith((i) => { manifest(i, 'HorizontalPodAutoscaler', 'gateway').spec.scaleTargetRef = { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'identity' } }),
    /HorizontalPodAutoscaler\/gateway: scales StatefulSet\/identity, a single-writer SQLite service/, 'identity autoscaled')
  reports(t, baseWith((i) => { identity(i).volumeMounts[0].mountPath = '/var/lib/identity' }), /StatefulSet\/identity: IDENTITY_DATABASE_PATH is in \/data: mount a volumeClaimTemplates volume there/, 'the database off the claim')
  reports(t, baseWith((i) => { identity(i).env = identity(i).env.filter((e: { name: string }) => e.name !== 'IDENTITY_ADMIN_HOST') }),
    /StatefulSet\/identity.*: identity's admin listener binds 127\.0\.0\.1: unreachable from other containers/, 'the admin listener on loopback')
  reports(t, baseWith((i) => { manifest(i, 'NetworkPolicy', 'identity').spec.ingress[0].from = [] }), /NetworkPolicy\/identity\.spec\.ingress\[0\]: admits everyone to StatefulSet\/identity's admin listener \(3002\)/, 'open to all')
  reports(t, baseWith((i) => { manifest(i, 'NetworkPolicy', 'identity').spec.ingress[0].from.push({ namespaceSelector: {} }) }), /admits \{"namespaceSelector":\{\}\} to StatefulSet\/identity's admin listener/, 'open to every namespace')
  reports(t, baseWith((i) => { manifest(i, 'NetworkPolicy', 'identity').spec.ingress[0].from[0].podSelector.matchLabels = { 'app.kubernetes.io/name': 'upstream-mock' } }),
    /only its clients \(Deployment\/gateway, Deployment\/console\) may connect/, 'open to a pod that is no client')
  reports(t, baseWith((i) => { for (const docs of i.manifests.values()) docs.splice(0, docs.length, ...docs.filter((d) => !(d.kind === 'NetworkPolicy' && d.metadata.name === 'identity'))) }),
    /StatefulSet\/identity: no NetworkPolicy limits who reaches its admin listener \(3002\)/, 'no policy')
})

t.test('the console: in the base, reached from the gateways only, reaching identity\'s two listeners', async (t) => {
  const consoleOf = (i: KubernetesInput): Record<string, any> => container(i, 'Deployment', 'console')
  const policy = (i: KubernetesInput, name: string): Record<string, any> => manifest(i, 'NetworkPolicy', name)
  reports(t, fileWith(KUSTOMIZATION, '  - console.yaml\n', ''), /^deploy\/kubernetes\/kustomization\.yaml: resources: no workload runs console \(node dist\/console\/server\.js\)/, 'the console left out')
  reports(t, baseWith((i) => { policy(i, 'identity').spec.ingress[0].from.pop() }),
    /NetworkPolicy\/identity: does not admit Deployment\/console to StatefulSet\/identity's admin listener \(3002\), which it calls/, 'identity\'s admin port closed to the console')
  const opened = baseWith((i) => { policy(i, 'console').spec.ingress[0].from[0].podSelector.matchLabels = { 'app.kubernetes.io/name': 'upstream-mock' } })
  reports(t, opened, /NetworkPolicy\/console\.spec\.ingress\[0\]: admits .* to Deployment\/console's http listener \(3004\); only its clients \(Deployment\/gateway\) may connect/, 'open to a pod that is no client')
  reports(t, opened, /NetworkPolicy\/console: does not admit Deployment\/gateway to Deployment\/console's http listener \(3004\)/, 'and closed to the gateways')
  reports(t, baseWith((i) => { for (const docs of i.manifests.values()) docs.splice(0, docs.length, ...docs.filter((d) => !(d.kind === 'NetworkPolicy' && d.metadata.name === 'console'))) }),
    /Deployment\/console: no NetworkPolicy limits who reaches its http listener \(3004\)/, 'no policy')
  reports(t, baseWith((i) => { envVar(consoleOf(i), 'CONSOLE_IDENTITY_ADMIN_URL').value = 'http://identity:3001' }),
    /env\[CONSOLE_IDENTITY_ADMIN_URL\]: identity does not serve GET \/admin\/users on its public listener \(port 3001\)/, 'the admin URL led to the public listener')
  reports(t, baseWith((i) => { envVar(gateway(i), 'GATEWAY_CONSOLE_URL').value = 'http://identity:3001' }), /env\[GATEWAY_CONSOLE_URL\]: http:\/\/identity:3001 leads to identity, not console/, 'the console URL at identity')
  reports(t, baseWith((i) => { consoleOf(i).readinessProbe.httpGet.path = '/console/healthz' }), /readinessProbe\.httpGet: console does not serve GET \/console\/healthz on its http listener/, 'a probe on a route it does not serve')
})

t.test('the gateways\' metrics: their own port, scraped by the monitoring namespace only', async (t) => {
  const policy = (i: KubernetesInput): Record<string, any> => manifest(i, 'NetworkPolicy', 'gateway')
  const annotations = (i: KubernetesInput): Record<string, any> => manifest(i, 'Deployment', 'gateway').spec.template.metadata.annotations
  reports(t, baseWith((i) => { policy(i).spec.ingress[1].from = [] }),
    /NetworkPolicy\/gateway\.spec\.ingress\[1\]: admits everyone to Deployment\/gateway's metrics listener \(9464\)/, 'metrics open to all')
  reports(t, baseWith((i) => { delete policy(i).spec.ingress[1].from[0].podSelector }),
    /admits \{"namespaceSelector":.*\} to Deployment\/gateway's metrics listener \(9464\); only its scraper/, 'a whole namespace admitted')
  reports(t, baseWith((i) => { policy(i).spec.ingress[1].from = [{ ipBlock: { cidr: '0.0.0.0/0' } }] }), /admits \{"ipBlock".*metrics listener/, 'an address range admitted')
  reports(t, baseWith((i) => { policy(i).spec.ingress[0].ports = [{ port: 'http' }, { port: 'metrics' }] }),
    /NetworkPolicy\/gateway\.spec\.ingress\[0\]: admits everyone to Deployment\/gateway's metrics listener \(9464\)/, 'the metrics port beside the public one')
  reports(t, baseWith((i) => { for (const docs of i.manifests.values()) docs.splice(0, docs.length, ...docs.filter((d) => !(d.kind === 'NetworkPolicy' && d.metadata.name === 'gateway'))) }),
    /Deployment\/gateway: no NetworkPolicy limits who reaches its metrics listener \(9464\)/, 'no policy')
  reports(t, baseWith((i) => { envVar(gateway(i), 'GATEWAY_METRICS_HOST').value = '127.0.0.1' }), /gateway's metrics listener binds 127\.0\.0\.1: unreachable from other containers/, 'metrics on the pod\'s loopback')
  reports(t, baseWith((i) => { gateway(i).ports.pop() }), /Deployment\/gateway.*\.ports: gateway's metrics listener \(9464\) has no containerPort/, 'no containerPort for it')
  reports(t, baseWith((i) => { annotations(i)['prometheus.io/port'] = '3000' }), /annotations: prometheus\.io\/port is "3000"; the metrics listener is on 9464/, 'the scrape aimed at the traffic port')
  reports(t, baseWith((i) => { delete annotations(i)['prometheus.io/scrape'] }), /annotations: prometheus\.io\/scrape is not "true"/, 'not scraped')
  reports(t, baseWith((i) => { annotations(i)['prometheus.io/path'] = '/stats' }), /annotations\[prometheus\.io\/path\]: gateway does not serve GET \/stats on its metrics listener/, 'a path it does not serve')
})

t.test('pod security and resources', async (t) => {
  reports(t, baseWith((i) => { gateway(i).securityContext.readOnlyRootFilesystem = false }), /Deployment\/gateway.*\.securityContext: readOnlyRootFilesystem: true is not set/, 'a writable root')
  reports(t, baseWith((i) => { delete gateway(i).securityContext.allowPrivilegeEscalation }), /allowPrivilegeEscalation: false is not set/, 'privilege escalation')
  reports(t, baseWith((i) => { gateway(i).securityContext.capabilities.drop = [] }), /capabilities\.drop: \["ALL"\] is not set/, 'capabilities kept')
  reports(t, baseWith((i) => { delete manifest(i, 'Deployment', 'redis').spec.template.spec.securityContext.runAsUser }), /Deployment\/redis.*: runAsUser must be a non-zero number/, 'an unverifiable non-root')
  reports(t, baseWith((i) => { delete manifest(i, 'StatefulSet', 'identity').spec.template.spec.securityContext.runAsNonRoot }), /StatefulSet\/identity.*: runAsNonRoot: true is not set/, 'root allowed')
  reports(t, baseWith((i) => { delete identity(i).resources.limits }), /StatefulSet\/identity.*\.resources: set requests\.cpu, requests\.memory and limits\.memory/, 'no memory limit')
  reports(t, baseWith((i) => { container(i, 'Deployment', 'redis').image = 'valkey/valkey:8' }), /Deployment\/redis.*\.image: "valkey\/valkey:8": neither the Portier image .* nor redis/, 'an image the checker does not know')
})
