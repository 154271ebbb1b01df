import { posix } from 'node:path'
import { checkPortierContainer, checkServes, describeListeners, listenerOnPort, type EnvSetting, type ResolvedContainer } from './check-containers.js'
import { checkUpstreamsFile } from './check-compose.js'
import { distPathOf, REDIS_DEFAULT_PORT, URL_REFERENCES, type CodeFacts, type Listener } from './code-facts.js'
import { claim, type DeployTree } from './deploy-files.js'
import { hostPort } from './net.js'
import { SECRET_NAME, asArray, type Node, type Problems } from './problems.js'

export const KUSTOMIZE_DIR = 'deploy/kubernetes'
export const KUSTOMIZATION = `${KUSTOMIZE_DIR}/kustomization.yaml`
const WORKLOAD_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet'])

interface Resource { file: string, obj: Node, id: string }

interface Container {
  workload: Resource
  /** The container as written in the manifest. */
  node: Node
  where: string
  kind: 'portier' | 'redis'
  /** containerPort by port name (and by its own number). */
  ports: Map<string, number>
  /** The ports the process listens on. */
  listening: number[]
  resolved?: ResolvedContainer
}

/** The parsed manifests, for drift tests that feed a changed copy. */
export interface KubernetesInput {
  kustomization: Node
  /** Manifests by file (from the repository root), each a list of documents. */
  manifests: Map<string, Node[]>
}

const selects = (selector: Node | undefined, labels: Node | undefined): boolean =>
  Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v)

function generatorSources (entries: unknown): Array<{ key: string, path: string }> {
  return asArray(entries).map(String).map((entry) => {
    const at = entry.indexOf('=')
    return at === -1 ? { key: posix.basename(entry), path: entry } : { key: entry.slice(0, at), path: entry.slice(at + 1) }
  })
}

/** Reads kustomization.yaml and the manifests it lists, checking that it lists every manifest of the folder. */
export function readKubernetes (tree: DeployTree, problems: Problems): KubernetesInput | null {
  const file = claim(tree, KUSTOMIZATION, 'yaml')
  if (file === undefined) {
    problems.add(KUSTOMIZATION, '', 'missing')
    return null
  }
  const kustomization = file.docs[0] as Node
  const manifests = new Map<string, Node[]>()
  const generated = new Set([
    ...asArray(kustomization.configMapGenerator).flatMap((g) => generatorSources(g.files).map((s) => posix.join(KUSTOMIZE_DIR, s.path))),
    ...asArray(kustomization.secretGenerator).flatMap((g) => asArray(g.envs).map((p) => posix.join(KUSTOMIZE_DIR, String(p))))
  ])
  for (const entry of asArray(kustomization.resources).map(String)) {
    const path = posix.join(KUSTOMIZE_DIR, entry)
    const manifest = claim(tree, path, 'yaml')
    if (manifest === undefined) problems.add(KUSTOMIZATION, `resources: ${entry}`, 'no such YAML file in deploy/kubernetes')
    else manifests.set(path, manifest.docs as Node[])
  }
  for (const [path, f] of tree.files) {
    if (f.kind === 'yaml' && path.startsWith(`${KUSTOMIZE_DIR}/`) && path !== KUSTOMIZATION && !manifests.has(path) && !generated.has(path)) {
      problems.add(KUSTOMIZATION, 'resources', `${path.slice(KUSTOMIZE_DIR.length + 1)} is in the folder but not listed: kubectl apply -k would skip it`)
    }
  }
  return { kustomization, manifests }
}

/**
 * The kustomize base against the code: every Portier container runs a server with an
 * environment its loader accepts; ports, probes and Services reach the listeners the
 * config makes; URLs name Services that lead to the right listener; the gateways'
 * upstreams come from the generated ConfigMap and load; secrets come only from the
 * generator; the gateway scales and drains, identity is a single writer on its volume,
 * and identity's private listener is reachable only from its clients.
 */
export function checkKubernetes (tree: DeployTree, facts: CodeFacts, problems: Problems, input: KubernetesInput | null = readKubernetes(tree, problems)): void {
  if (input === null) return
  const { kustomization } = input

  // Generators: ConfigMaps from committed files, Secrets only from gitignored env files.
  const configMaps = new Map<string, Array<{ key: string, path: string }>>()
  for (const [i, g] of asArray(kustomization.configMapGenerator).entries()) {
    const sources = generatorSources(g.files).map((s) => ({ key: s.key, path: posix.join(KUSTOMIZE_DIR, s.path) }))
    for (const s of sources) if (!tree.files.has(s.path)) problems.add(KUSTOMIZATION, `configMapGenerator[${i}]`, `${s.path} does not exist`)
    configMaps.set(String(g.name), sources)
  }
  const secrets = new Map<string, Set<string>>()
  for (const [i, g] of asArray(kustomization.secretGenerator).entries()) {
    const where = `secretGenerator[${i}] ${String(g.name)}`
    if (g.literals !== undefined || g.files !== undefined) problems.add(KUSTOMIZATION, where, 'secret values only from `envs` (a gitignored file), never literals or committed files')
    const keys = new Set<string>()
    for (const env of asArray(g.envs).map((p) => posix.join(KUSTOMIZE_DIR, String(p)))) {
      if (tree.files.has(env)) problems.add(KUSTOMIZATION, where, `${env} is committed: secrets live in a gitignored file beside its .example`)
      const example = claim(tree, `${env}.example`, 'env-example')
      if (example === undefined) {
        problems.add(KUSTOMIZATION, where, `${env}.example is missing: it lists the keys to fill`)
        continue
      }
      for (const e of example.entries) keys.add(e.name)
    }
    secrets.set(String(g.name), keys)
  }

  const resources: Resource[] = []
  for (const [file, docs] of input.manifests) {
    for (const obj of docs) {
      const id = `${String(obj?.kind)}/${String(obj?.metadata?.name)}`
      if (typeof obj?.apiVersion !== 'string' || typeof obj?.kind !== 'string' || typeof obj?.metadata?.name !== 'string') problems.add(file, id, 'needs apiVersion, kind and metadata.name')
      if (resources.some((r) => r.id === id)) problems.add(file, id, 'defined twice')
      if (obj?.kind === 'Secret') problems.add(file, id, 'a committed Secret: generate it from the gitignored env file (secretGenerator)')
      resources.push({ file, obj, id })
    }
  }
  const imageNames = new Set(asArray(kustomization.images).map((i) => String(i.name)))
  const usedKeys = new Set<string>()

  // Workloads and their containers.
  const containers: Container[] = []
  for (const workload of resources.filter((r) => WORKLOAD_KINDS.has(r.obj.kind))) {
    const spec: Node = workload.obj.spec?.template?.spec ?? {}
    const podLabels = workload.obj.spec?.template?.metadata?.labels
    if (!selects(workload.obj.spec?.selector?.matchLabels, podLabels)) problems.add(workload.file, `${workload.id}.spec.selector`, 'does not select the pod template\'s labels')
    for (const [i, c] of asArray(spec.containers).entries()) {
      const where = `${workload.id}.spec.template.spec.containers[${i}]`
      const image = String(c.image ?? '')
      const base = image.split(/[:@]/)[0] as string
      const ports = new Map<string, number>()
      for (const p of asArray(c.ports)) {
        if (p.name !== undefined) ports.set(String(p.name), Number(p.containerPort))
        ports.set(String(p.containerPort), Number(p.containerPort))
      }
      checkPodSecurity(workload, spec, c, where, problems)
      if (imageNames.has(base)) {
        for (const e of asArray(c.env)) if (e.valueFrom?.secretKeyRef !== undefined) usedKeys.add(`${String(e.valueFrom.secretKeyRef.name)}/${String(e.valueFrom.secretKeyRef.key)}`)
        const resolved = checkPortierContainer({ file: workload.file, where, command: Array.isArray(c.command) ? [...c.command, ...asArray(c.args)].map(String) : null, env: envOf(workload.file, where, c, secrets, problems) }, facts, problems)
        if (resolved === null) continue
        const container: Container = { workload, node: c, where, kind: 'portier', ports, listening: resolved.loaded.listeners.map((l) => l.port), resolved }
        containers.push(container)
        checkPortierPod(container, resolved, facts, problems)
      } else if (/^redis$/.test(base)) {
        const args = [...asArray(c.command), ...asArray(c.args)].map(String)
        const at = args.indexOf('--port')
        const listening = [at === -1 ? REDIS_DEFAULT_PORT : Number(args[at + 1])]
        for (const port of new Set(ports.values())) if (!listening.includes(port)) problems.add(workload.file, `${where}.ports`, `containerPort ${port}: redis listens on ${listening.join(', ')}`)
        containers.push({ workload, node: c, where, kind: 'redis', ports, listening })
      } else {
        problems.add(workload.file, `${where}.image`, `"${image}": neither the Portier image (kustomization images: ${[...imageNames].join(', ')}) nor redis; teach test/deploy/checker/check-kubernetes.ts about it`)
      }
    }
  }

  for (const [name, keys] of secrets) {
    for (const key of keys) if (!usedKeys.has(`${name}/${key}`)) problems.add(KUSTOMIZATION, `secretGenerator ${name}`, `${key} is in its .example but no container reads it`)
  }

  for (const service of facts.services) {
    if (!containers.some((c) => c.resolved?.service.name === service.name)) problems.add(KUSTOMIZATION, 'resources', `no workload runs ${service.name} (node ${distPathOf(service.source)}): the base would lack it`)
  }

  // Services: each selects one workload, and each port leads to a port something listens on.
  const services = new Map<string, Map<number, { container: Container, port: number }>>()
  for (const service of resources.filter((r) => r.obj.kind === 'Service')) {
    const selector = service.obj.spec?.selector
    const owners = [...new Set(containers.filter((c) => selects(selector, c.workload.obj.spec?.template?.metadata?.labels)).map((c) => c.workload))]
    if (owners.length !== 1) {
      problems.add(service.file, `${service.id}.spec.selector`, `selects ${owners.length} workloads; expected exactly one`)
      continue
    }
    const byPort = new Map<number, { container: Container, port: number }>()
    for (const [i, p] of asArray(service.obj.spec?.ports).entries()) {
      const target = String(p.targetPort ?? p.port)
      const container = containers.find((c) => c.workload === owners[0] && c.ports.has(target))
      const port = container?.ports.get(target)
      if (container === undefined || port === undefined) {
        problems.add(service.file, `${service.id}.spec.ports[${i}].targetPort`, `${target} is no container port of ${owners[0]?.id ?? '?'}`)
        continue
      }
      if (!container.listening.includes(port)) {
        problems.add(service.file, `${service.id}.spec.ports[${i}]`, `leads to ${port}; the container listens on ${container.listening.join(', ')}`)
        continue
      }
      byPort.set(Number(p.port), { container, port })
    }
    services.set(String(service.obj.metadata?.name), byPort)
  }
  /** `http://name[.ns.svc…]:port` → the container port behind that Service port. */
  const reach = (file: string, where: string, address: string): { container: Container, port: number } | null => {
    const target = hostPort(address)
    const name = target?.host.split('.')[0] ?? ''
    const service = services.get(name)
    const entry = target === null ? undefined : service?.get(target.port)
    if (service === undefined) problems.add(file, where, `${address}: no Service "${name}" in this base`)
    else if (entry === undefined) problems.add(file, where, `${address}: Service ${name} has no port ${target?.port ?? '?'} (it has ${[...service.keys()].join(', ')})`)
    return entry ?? null
  }

  // What each container's URLs reach, and who the clients of each private listener are.
  const clients = new Map<string, Set<Resource>>()
  for (const container of containers) {
    const resolved = container.resolved
    if (resolved === undefined) continue
    for (const [variable, reference] of Object.entries(URL_REFERENCES)) {
      const setting = resolved.env.get(variable)
      if (setting?.literal == null) continue
      const target = reach(container.workload.file, setting.where, setting.literal)
      if (target === null) continue
      const runs = target.container.kind === 'redis' ? 'redis' : target.container.resolved?.service.name
      if (runs !== reference.service) {
        problems.add(container.workload.file, setting.where, `${setting.literal} leads to ${runs ?? '?'}, not ${reference.service}`)
        continue
      }
      const listener = target.container.resolved === undefined ? undefined : listenerOnPort(target.container.resolved, target.port)
      if (listener !== undefined && target.container.resolved !== undefined) {
        if (reference.route !== undefined) checkServes(container.workload.file, setting.where, target.container.resolved.service, listener, reference.route.method, reference.route.path, facts, problems)
        const key = `${target.container.workload.id}:${listener.port}`
        clients.set(key, (clients.get(key) ?? new Set()).add(container.workload))
      }
    }
    if (resolved.loaded.upstreamsFile !== undefined) checkUpstreamsConfigMap(container, resolved.loaded.upstreamsFile, configMaps, tree, reach, problems)
  }

  for (const container of containers) {
    const resolved = container.resolved
    if (resolved === undefined) continue
    if (resolved.service.name === 'gateway') checkScaledAndDrained(container, resolved, resources, problems)
    if (resolved.loaded.databasePath !== undefined) checkSingleWriter(container, resolved.loaded.databasePath, resources, problems)
    for (const listener of resolved.loaded.listeners.filter((l) => l.private)) {
      checkPrivateListener(container, listener, clients.get(`${container.workload.id}:${listener.port}`) ?? new Set(), resources, problems)
    }
  }
}

function envOf (file: string, where: string, c: Node, secrets: Map<string, Set<string>>, problems: Problems): EnvSetting[] {
  if (c.envFrom !== undefined) problems.add(file, `${where}.envFrom`, 'list variables one by one in `env` so their names can be checked')
  return asArray(c.env).map((e) => {
    const place = `${where}.env[${String(e.name)}]`
    if (e.value !== undefined) return { name: String(e.name), literal: String(e.value), where: place }
    const ref = e.valueFrom?.secretKeyRef
    if (ref === undefined) problems.add(file, place, 'only `value` or `valueFrom.secretKeyRef` are understood here')
    else if (!secrets.has(String(ref.name))) problems.add(file, place, `Secret "${String(ref.name)}" is not made by kustomization.yaml's secretGenerator`)
    else if (!(secrets.get(String(ref.name)) as Set<string>).has(String(ref.key))) problems.add(file, place, `key ${String(ref.key)} is not in the Secret's .example file`)
    if (ref !== undefined && !SECRET_NAME.test(String(e.name))) problems.add(file, place, 'a non-secret setting read from a Secret: use a plain value')
    return { name: String(e.name), literal: null, where: place }
  })
}

function checkPodSecurity (workload: Resource, pod: Node, c: Node, where: string, problems: Problems): void {
  const sc = { ...pod.securityContext, ...c.securityContext }
  if (sc.runAsNonRoot !== true) problems.add(workload.file, where, 'runAsNonRoot: true is not set (pod or container securityContext)')
  // The image names its user ("node"); the kubelet can only verify a numeric id.
  if (!(Number.isInteger(sc.runAsUser) && sc.runAsUser > 0)) problems.add(workload.file, where, 'runAsUser must be a non-zero number so the kubelet can enforce runAsNonRoot')
  if (c.securityContext?.allowPrivilegeEscalation !== false) problems.add(workload.file, `${where}.securityContext`, 'allowPrivilegeEscalation: false is not set')
  if (c.securityContext?.readOnlyRootFilesystem !== true) problems.add(workload.file, `${where}.securityContext`, 'readOnlyRootFilesystem: true is not set (mount an emptyDir where it must write)')
  if (!asArray(c.securityContext?.capabilities?.drop).includes('ALL')) problems.add(workload.file, `${where}.securityContext`, 'capabilities.drop: ["ALL"] is not set')
  const r = c.resources ?? {}
  if (r.requests?.cpu === undefined || r.requests?.memory === undefined || r.limits?.memory === undefined) problems.add(workload.file, `${where}.resources`, 'set requests.cpu, requests.memory and limits.memory')
}

function checkPortierPod (container: Container, resolved: ResolvedContainer, facts: CodeFacts, problems: Problems): void {
  const { file } = container.workload
  const c = container.node
  const declared = new Set(container.ports.values())
  for (const port of declared) if (!container.listening.includes(port)) problems.add(file, `${container.where}.ports`, `containerPort ${port}: ${resolved.service.name} listens on ${describeListeners(resolved)}`)
  for (const listener of resolved.loaded.listeners) if (!declared.has(listener.port)) problems.add(file, `${container.where}.ports`, `${resolved.service.name}'s ${listener.name} listener (${listener.port}) has no containerPort`)
  for (const probe of ['readinessProbe', 'livenessProbe']) {
    const get = c[probe]?.httpGet
    const where = `${container.where}.${probe}`
    if (get === undefined) {
      problems.add(file, where, 'missing (httpGet on a health route)')
      continue
    }
    const port = container.ports.get(String(get.port))
    const listener = port === undefined ? undefined : listenerOnPort(resolved, port)
    if (listener === undefined) {
      problems.add(file, `${where}.httpGet.port`, `${String(get.port)} is not a port ${resolved.service.name} listens on (${describeListeners(resolved)})`)
      continue
    }
    checkServes(file, `${where}.httpGet`, resolved.service, listener, 'GET', String(get.path), facts, problems)
    if (probe === 'readinessProbe' && get.path !== resolved.service.readinessPath) problems.add(file, `${where}.httpGet.path`, `${String(get.path)}: ${resolved.service.name} is ready when ${resolved.service.readinessPath} answers 2xx`)
  }
  for (const listener of resolved.loaded.listeners.filter((l) => l.scraped === true)) checkScrapeAnnotations(container, resolved, listener, facts, problems)
  if ('REDIS_URL' in resolved.service.schema.properties && !resolved.env.has('REDIS_URL')) {
    problems.add(file, `${container.where}.env`, `REDIS_URL is not set: ${resolved.service.name} would keep caches and events in process, unshared between replicas`)
  }
}

/** The prometheus.io annotations on the pod template lead a pod-discovering Prometheus to the metrics listener. */
function checkScrapeAnnotations (container: Container, resolved: ResolvedContainer, listener: Listener, facts: CodeFacts, problems: Problems): void {
  const { file, id } = container.workload
  const where = `${id}.spec.template.metadata.annotations`
  const annotations: Node = container.workload.obj.spec?.template?.metadata?.annotations ?? {}
  if (annotations['prometheus.io/scrape'] !== 'true') problems.add(file, where, `prometheus.io/scrape is not "true": nothing scrapes the ${listener.name} listener (${listener.port})`)
  if (annotations['prometheus.io/port'] !== String(listener.port)) {
    problems.add(file, where, `prometheus.io/port is ${JSON.stringify(annotations['prometheus.io/port'])}; the ${listener.name} listener is on ${listener.port}`)
  }
  checkServes(file, `${where}[prometheus.io/path]`, resolved.service, listener, 'GET', String(annotations['prometheus.io/path'] ?? '/metrics'), facts, problems)
}

function checkUpstreamsConfigMap (container: Container, path: string, configMaps: Map<string, Array<{ key: string, path: string }>>, tree: DeployTree,
  reach: (file: string, where: string, address: string) => unknown, problems: Problems): void {
  const { file } = container.workload
  const spec: Node = container.workload.obj.spec.template.spec
  const mount = asArray(container.node.volumeMounts).find((m) => path.startsWith(`${String(m.mountPath)}/`))
  const volume = asArray(spec.volumes).find((v) => v.name === mount?.name)
  const sources = configMaps.get(String(volume?.configMap?.name))
  const key = mount === undefined ? '' : path.slice(String(mount.mountPath).length + 1)
  const source = sources?.find((s) => s.key === key)
  if (source === undefined) {
    problems.add(file, `${container.where}.env[GATEWAY_UPSTREAMS_FILE]`, `${path} is not a key of a ConfigMap from kustomization.yaml's configMapGenerator mounted there`)
    return
  }
  checkUpstreamsFile(tree, source.path, (upstream, target) => reach(source.path, `upstreams.${upstream}.target`, target) !== null, problems)
}

function preStopSleepSeconds (c: Node): number | null {
  const preStop = c.lifecycle?.preStop
  if (preStop?.sleep?.seconds !== undefined) return Number(preStop.sleep.seconds)
  const command = asArray(preStop?.exec?.command).map(String).join(' ')
  const match = /(?:^|\s)sleep\s+(\d+)$/.exec(command)
  return match === null ? null : Number(match[1])
}

/** The gateway: a Deployment of 2+ replicas with an HPA and a PDB, whose pods leave the endpoints before they drain. */
function checkScaledAndDrained (container: Container, resolved: ResolvedContainer, resources: Resource[], problems: Problems): void {
  const { workload } = container
  const { file, obj, id } = workload
  if (obj.kind !== 'Deployment') problems.add(file, id, 'the gateway is stateless: run it as a Deployment')
  if (!(Number(obj.spec?.replicas) >= 2)) problems.add(file, `${id}.spec.replicas`, `${String(obj.spec?.replicas)}: run at least 2 gateways`)
  const hpa = resources.find((r) => r.obj.kind === 'HorizontalPodAutoscaler' && r.obj.spec?.scaleTargetRef?.kind === obj.kind && r.obj.spec?.scaleTargetRef?.name === obj.metadata?.name)
  if (hpa === undefined) problems.add(file, id, 'no HorizontalPodAutoscaler scales it')
  else {
    if (hpa.obj.apiVersion !== 'autoscaling/v2') problems.add(hpa.file, hpa.id, `apiVersion ${String(hpa.obj.apiVersion)}: use autoscaling/v2`)
    if (!(Number(hpa.obj.spec?.minReplicas) >= 2)) problems.add(hpa.file, `${hpa.id}.spec.minReplicas`, 'at least 2, or one gateway is a single point of failure')
  }
  const labels = obj.spec?.template?.metadata?.labels
  const pdb = resources.find((r) => r.obj.kind === 'PodDisruptionBudget' && selects(r.obj.spec?.selector?.matchLabels, labels))
  if (pdb === undefined) problems.add(file, id, 'no PodDisruptionBudget covers its pods')
  else if (pdb.obj.apiVersion !== 'policy/v1') problems.add(pdb.file, pdb.id, `apiVersion ${String(pdb.obj.apiVersion)}: use policy/v1`)
  const spec: Node = obj.spec?.template?.spec ?? {}
  const sleep = preStopSleepSeconds(container.node)
  const drain = resolved.loaded.shutdownGraceSeconds ?? 0
  if (sleep === null) problems.add(file, `${container.where}.lifecycle.preStop`, 'missing: sleep a few seconds so the endpoints drop the pod before it stops taking requests')
  const grace = Number(spec.terminationGracePeriodSeconds ?? 30)
  if (!(grace > (sleep ?? 0) + drain)) problems.add(file, `${id}.spec.template.spec.terminationGracePeriodSeconds`, `${grace} s is not more than the preStop sleep (${sleep ?? 0} s) + GATEWAY_SHUTDOWN_GRACE_SECONDS (${drain} s): the kubelet would kill requests mid-drain`)
}

/** A service with a SQLite database: one StatefulSet pod owning its claim, never autoscaled. */
function checkSingleWriter (container: Container, databasePath: string, resources: Resource[], problems: Problems): void {
  const { file, obj, id } = container.workload
  if (obj.kind !== 'StatefulSet') problems.add(file, id, 'SQLite has a single writer: run it as a StatefulSet (the old pod is gone before the new one mounts the volume)')
  if (obj.spec?.replicas !== 1) problems.add(file, `${id}.spec.replicas`, `${String(obj.spec?.replicas)}: must be exactly 1 (SQLite, single writer; each replica would get its own empty database)`)
  const hpa = resources.find((r) => r.obj.kind === 'HorizontalPodAutoscaler' && r.obj.spec?.scaleTargetRef?.name === obj.metadata?.name)
  if (hpa !== undefined) problems.add(hpa.file, hpa.id, `scales ${id}, a single-writer SQLite service`)
  const spec: Node = obj.spec?.template?.spec ?? {}
  const mounts = asArray(spec.containers).flatMap((c) => asArray(c.volumeMounts))
  const mount = mounts.find((m) => m.mountPath === posix.dirname(databasePath))
  const claims = asArray(obj.spec?.volumeClaimTemplates).map((t) => t.metadata?.name)
  if (mount === undefined || !claims.includes(mount.name)) problems.add(file, id, `IDENTITY_DATABASE_PATH is in ${posix.dirname(databasePath)}: mount a volumeClaimTemplates volume there`)
}

/** A private listener: some NetworkPolicy selects the pod, whatever admits that port admits only its clients, and admits each of them. */
function checkPrivateListener (container: Container, listener: Listener, clients: Set<Resource>, resources: Resource[], problems: Problems): void {
  const { file, obj, id } = container.workload
  const labels = obj.spec?.template?.metadata?.labels
  const names = [...container.ports].filter(([, port]) => port === listener.port).map(([name]) => name)
  const policies = resources.filter((r) => r.obj.kind === 'NetworkPolicy' && selects(r.obj.spec?.podSelector?.matchLabels, labels) &&
    (asArray(r.obj.spec?.policyTypes).includes('Ingress') || r.obj.spec?.ingress !== undefined))
  if (policies.length === 0) {
    problems.add(file, id, `no NetworkPolicy limits who reaches its ${listener.name} listener (${listener.port})`)
    return
  }
  const allowed = [...clients].map((c) => c.obj.spec?.template?.metadata?.labels)
  const admitsPort = (rule: Node): boolean => {
    const ports = asArray(rule.ports)
    return ports.length === 0 || ports.some((p) => names.includes(String(p.port)))
  }
  // A client the policies leave out would be refused by the network: its URL leads nowhere.
  for (const client of clients) {
    const labels = client.obj.spec?.template?.metadata?.labels
    const admitted = policies.some((policy) => asArray(policy.obj.spec?.ingress).some((rule) => admitsPort(rule) && (asArray(rule.from).length === 0 ||
      asArray(rule.from).some((peer) => peer.podSelector !== undefined && peer.namespaceSelector === undefined && peer.ipBlock === undefined && selects(peer.podSelector.matchLabels, labels)))))
    if (!admitted) problems.add(policies[0]?.file ?? file, policies.map((p) => p.id).join(', '), `does not admit ${client.id} to ${id}'s ${listener.name} listener (${listener.port}), which it calls`)
  }
  for (const policy of policies) {
    for (const [i, rule] of asArray(policy.obj.spec?.ingress).entries()) {
      if (!admitsPort(rule)) continue
      const where = `${policy.id}.spec.ingress[${i}]`
      const from = asArray(rule.from)
      if (from.length === 0) problems.add(policy.file, where, `admits everyone to ${id}'s ${listener.name} listener (${listener.port})`)
      for (const peer of from) {
        const named = (selector: Node | undefined): boolean => Object.keys(selector?.matchLabels ?? {}).length > 0
        const client = peer.podSelector !== undefined && peer.namespaceSelector === undefined && peer.ipBlock === undefined &&
          named(peer.podSelector) && allowed.some((l) => selects(peer.podSelector.matchLabels, l))
        // A scraper lives outside this base: named pods of a named namespace, never a whole namespace or an address range.
        const scraper = listener.scraped === true && peer.ipBlock === undefined && named(peer.namespaceSelector) && named(peer.podSelector)
        if (!client && !scraper) {
          const who = listener.scraped === true ? 'its scraper (podSelector and namespaceSelector, both with labels)' : `its clients (${[...clients].map((c) => c.id).join(', ') || 'none'})`
          problems.add(policy.file, where, `admits ${JSON.stringify(peer)} to ${id}'s ${listener.name} listener (${listener.port}); only ${who} may connect`)
        }
      }
    }
  }
}
