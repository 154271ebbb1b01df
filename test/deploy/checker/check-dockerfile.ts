import { posix } from 'node:path'
import { GatewayEnvSchema } from '../../../gateway/config.js'
import { checkHealthUrl, checkPortierContainer, healthcheckUrl, type EnvSetting } from './check-containers.js'
import { ALLOWED_EXTRA_ENV, HEALTHCHECK_SOURCE, distPathOf, type CodeFacts, type ServiceFacts } from './code-facts.js'
import { claim, secretFiles, type DeployTree } from './deploy-files.js'
import { copyArgs, type Dockerfile, type Instruction, type Stage } from './parse-dockerfile.js'
import { SECRET_NAME, type Problems } from './problems.js'

export const DOCKERFILE = 'deploy/Dockerfile'
const COMPILERS = /(^|\s)(g\+\+|gcc|make|python3|build-essential)(\s|$)/
/** The build context is the repository root; these must never be sent into it. */
const ALWAYS_IGNORED = ['.git', 'node_modules', 'dist']

/** A service's listeners with nothing but its schema defaults (and stand-ins for required secrets). */
export function defaultListeners (service: ServiceFacts): Array<{ name: string, port: number, private: boolean }> {
  const env: Record<string, string> = {}
  for (const name of (service.schema.required ?? []) as string[]) {
    if ((service.schema.properties[name] as { default?: unknown } | undefined)?.default === undefined) env[name] = 's'.repeat(64)
  }
  for (const name of service.requiredByRule ?? []) env[name] = 's'.repeat(64)
  return service.load(env).listeners
}

function envSettings (instruction: Instruction): Array<{ name: string, value: string }> {
  if (!instruction.args.includes('=')) {
    const [name, ...value] = instruction.args.split(' ')
    return [{ name: name as string, value: value.join(' ') }]
  }
  return instruction.args.split(' ').map((pair) => {
    const at = pair.indexOf('=')
    return { name: pair.slice(0, at), value: pair.slice(at + 1) }
  })
}

function resolveDest (workdir: string, dest: string, source: string): string {
  const base = dest.startsWith('/') ? dest : posix.join(workdir, dest)
  return dest.endsWith('/') || dest === '.' ? posix.join(base, posix.basename(source)) : posix.normalize(base)
}

function lastValue (stage: Stage, keyword: string): Instruction | undefined {
  return stage.instructions.filter((i) => i.keyword === keyword).at(-1)
}

/** A COPY/ADD source that the context filter would drop: a pattern equal to it or to a folder above it. */
function ignoredBy (patterns: string[], source: string): string | undefined {
  const clean = posix.normalize(source).replace(/\/$/, '')
  return patterns.find((p) => clean === p || clean.startsWith(`${p}/`))
}

/**
 * The image: multi-stage, native modules built in a stage of their own and copied into
 * a slim final stage that runs as a non-root user, with the compiled entry points, the
 * files they read relative to WORKDIR, a health check on the default service's
 * readiness route and exactly the public listeners' ports exposed.
 */
export function checkDockerfile (tree: DeployTree, facts: CodeFacts, problems: Problems, override?: Dockerfile): void {
  const file = claim(tree, DOCKERFILE, 'dockerfile')
  if (file === undefined) {
    problems.add(DOCKERFILE, '', 'missing')
    return
  }
  const { stages, preamble } = override ?? file.dockerfile
  const at = (i: Instruction): string => `line ${i.line}: ${i.keyword}`

  if (stages.length < 2) problems.add(DOCKERFILE, '', `${stages.length} stage(s): the image must be multi-stage (build tools stay out of the final stage)`)
  const final = stages.at(-1)
  if (final === undefined) return
  const images = new Set(stages.map((s) => s.image))
  // Native modules are compiled against the Node ABI of their stage: every stage must share one base.
  if (images.size !== 1) problems.add(DOCKERFILE, 'FROM', `stages use different base images (${[...images].join(', ')}): native modules must be built on the runtime's Node`)
  const major = Number(/^node:(\d+)/.exec(final.image)?.[1] ?? NaN)
  if (!(major >= facts.nodeMajor)) problems.add(DOCKERFILE, `line ${final.line}: FROM`, `${final.image} is not a Node ${facts.nodeMajor}+ image (package.json engines)`)

  const user = lastValue(final, 'USER')
  if (user === undefined || /^(root|0)(:|$)/.test(user.args)) problems.add(DOCKERFILE, user !== undefined ? at(user) : `stage ${final.name ?? 'final'}`, 'the final stage must switch to a non-root USER')

  // Production node_modules: `npm ci --omit=dev --ignore-scripts`, then the native modules rebuilt.
  const depsStage = stages.find((s) => s.instructions.some((i) => i.keyword === 'RUN' && /\bnpm ci\b/.test(i.args) && i.args.includes('--omit=dev')))
  if (depsStage === undefined) {
    problems.add(DOCKERFILE, '', 'no stage runs `npm ci --omit=dev`: the runtime must not carry dev dependencies')
  } else {
    const runs = depsStage.instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args).join(' && ')
    if (!/npm ci\b[^&]*--ignore-scripts/.test(runs)) problems.add(DOCKERFILE, `stage ${depsStage.name ?? '?'}`, '`npm ci --omit=dev` must use --ignore-scripts: "prepare" runs tsc, a dev dependency')
    const rebuilt = /npm rebuild ([^&;]*)/.exec(runs)?.[1]?.trim().split(/\s+/) ?? []
    for (const native of facts.nativeModules) {
      if (!rebuilt.includes(native)) problems.add(DOCKERFILE, `stage ${depsStage.name ?? '?'}`, `${native} has an install script (package-lock.json) and is not in \`npm rebuild\`: it would ship without its native binary`)
    }
    if (depsStage === final) problems.add(DOCKERFILE, `stage ${final.name ?? 'final'}`, 'build the native modules in a stage of their own and copy node_modules into the final stage')
    const copied = final.instructions.some((i) => i.keyword === 'COPY' && i.flags.from === depsStage.name && copyArgs(i).sources.some((s) => s.endsWith('node_modules')))
    if (!copied) problems.add(DOCKERFILE, `stage ${final.name ?? 'final'}`, `node_modules is not copied from the "${depsStage.name ?? '?'}" stage`)
  }
  for (const i of final.instructions) {
    if (i.keyword === 'RUN' && /apt-get install|apk add/.test(i.args) && COMPILERS.test(i.args)) problems.add(DOCKERFILE, at(i), 'the final stage installs build tools: compile in the deps stage')
  }

  // The TypeScript build: every folder tsconfig.build.json compiles is copied in.
  const buildStage = stages.find((s) => s.instructions.some((i) => i.keyword === 'RUN' && /npm run build\b/.test(i.args)))
  if (buildStage === undefined) {
    problems.add(DOCKERFILE, '', 'no stage runs `npm run build`')
  } else {
    const sources = new Set(buildStage.instructions.filter((i) => i.keyword === 'COPY' && i.flags.from === undefined)
      .flatMap((i) => copyArgs(i).sources.map((s) => posix.normalize(s).replace(/\/$/, ''))))
    for (const folder of facts.buildInclude) {
      if (!sources.has(folder)) problems.add(DOCKERFILE, `stage ${buildStage.name ?? '?'}`, `"${folder}" is compiled by tsconfig.build.json but not copied into the build stage`)
    }
    for (const config of ['tsconfig.json', 'tsconfig.build.json']) {
      if (!sources.has(config)) problems.add(DOCKERFILE, `stage ${buildStage.name ?? '?'}`, `${config} is not copied into the build stage`)
    }
    const dist = final.instructions.some((i) => i.keyword === 'COPY' && i.flags.from === buildStage.name && copyArgs(i).sources.some((s) => /\/dist\/?$/.test(s)))
    if (!dist) problems.add(DOCKERFILE, `stage ${final.name ?? 'final'}`, `dist is not copied from the "${buildStage.name ?? '?'}" stage`)
  }

  // Files read relative to the working directory.
  const workdir = lastValue(final, 'WORKDIR')?.args ?? '/'
  const placed = new Set(final.instructions.filter((i) => i.keyword === 'COPY').flatMap((i) => {
    const { sources, dest } = copyArgs(i)
    return sources.map((s) => resolveDest(workdir, dest, s))
  }))
  const needed: Array<[string, string]> = [
    ['package.json', '"type": "module" makes Node load dist/**/*.js as ES modules'],
    [String((GatewayEnvSchema.properties.GATEWAY_UPSTREAMS_FILE as unknown as { default: string }).default), "the gateway's default GATEWAY_UPSTREAMS_FILE, a path relative to WORKDIR"]
  ]
  for (const [path, why] of needed) {
    const target = posix.join(workdir, path)
    if (!placed.has(target)) problems.add(DOCKERFILE, `stage ${final.name ?? 'final'}`, `${target} is not copied into the image (${why})`)
  }

  // COPY sources exist in the build context and are not filtered out of it.
  const ignorePath = `${DOCKERFILE}.dockerignore`
  const ignore = claim(tree, ignorePath, 'dockerignore')
  if (ignore === undefined) problems.add(ignorePath, '', 'missing: without it the whole repository (node_modules, local secrets) is sent as the build context')
  const patterns = ignore?.patterns ?? []
  for (const stage of stages) {
    for (const i of stage.instructions) {
      if ((i.keyword !== 'COPY' && i.keyword !== 'ADD') || i.flags.from !== undefined) continue
      for (const source of copyArgs(i).sources) {
        if (!facts.sourceExists(source)) problems.add(DOCKERFILE, at(i), `${source} does not exist in the repository (the build context)`)
        const pattern = ignoredBy(patterns, source)
        if (pattern !== undefined) problems.add(DOCKERFILE, at(i), `${source} is excluded from the build context by "${pattern}" in ${ignorePath}`)
      }
    }
  }
  for (const path of [...ALWAYS_IGNORED, ...secretFiles(tree)]) {
    if (!patterns.includes(path)) problems.add(ignorePath, '', `"${path}" must be excluded from the build context`)
  }

  // What runs: the default command, its health check, the exposed ports.
  const cmd = lastValue(final, 'CMD')
  const env: EnvSetting[] = final.instructions.filter((i) => i.keyword === 'ENV').flatMap((i) => envSettings(i).map(({ name, value }) => ({ name, literal: value, where: at(i) })))
  for (const i of [...preamble, ...stages.flatMap((s) => s.instructions)].filter((i) => i.keyword === 'ENV' || i.keyword === 'ARG')) {
    for (const { name, value } of envSettings(i)) {
      if (SECRET_NAME.test(name) && value !== '') problems.add(DOCKERFILE, at(i), `${name}: a credential must never be baked into the image`)
    }
  }
  const known = new Set([...facts.services.flatMap((s) => Object.keys(s.schema.properties)), ...Object.keys(ALLOWED_EXTRA_ENV)])
  for (const setting of env) {
    if (!known.has(setting.name)) problems.add(DOCKERFILE, setting.where, `${setting.name} is read by no Portier service`)
  }
  if (cmd?.exec == null) {
    problems.add(DOCKERFILE, cmd !== undefined ? at(cmd) : '', 'the final stage needs a CMD in exec form (["node", "dist/…/server.js"]) so node gets the signals')
  } else {
    checkEntryPoint(cmd.exec[1] ?? '', at(cmd), facts, problems)
    // Only the image's own ENV: no deploy file sets anything for `docker run portier`.
    const imageEnv = env.filter((s) => !SECRET_NAME.test(s.name))
    const service = facts.serviceByEntry(cmd.exec[1] ?? '')
    const secrets = service === undefined
      ? []
      : ((service.schema.required ?? []) as string[]).filter((n) => (service.schema.properties[n] as { default?: unknown } | undefined)?.default === undefined)
    const resolved = checkPortierContainer({ file: DOCKERFILE, where: at(cmd), command: cmd.exec, env: [...imageEnv, ...secrets.map((name) => ({ name, literal: null, where: at(cmd) }))] }, facts, problems)
    const health = lastValue(final, 'HEALTHCHECK')
    if (health?.exec == null) {
      problems.add(DOCKERFILE, health !== undefined ? at(health) : '', 'the final stage needs HEALTHCHECK CMD ["node", "dist/cli/healthcheck.js", "<url>"] (the slim image has no curl)')
    } else {
      checkEntryPoint(health.exec[1] ?? '', at(health), facts, problems, HEALTHCHECK_SOURCE)
      const url = healthcheckUrl(DOCKERFILE, at(health), health.exec, problems)
      if (url !== null && resolved !== null) checkHealthUrl(DOCKERFILE, at(health), url, resolved, facts, problems)
    }
  }
  const exposed = final.instructions.filter((i) => i.keyword === 'EXPOSE').flatMap((i) => i.args.split(' ').map((p) => Number(p.replace(/\/tcp$/, ''))))
  const listeners = facts.services.flatMap(defaultListeners)
  const expected = [...new Set(listeners.filter((l) => !l.private).map((l) => l.port))].sort()
  for (const l of listeners.filter((l) => l.private)) {
    if (exposed.includes(l.port)) problems.add(DOCKERFILE, 'EXPOSE', `${l.port} is a private listener (${l.name}): \`docker run -P\` would publish it`)
  }
  if (JSON.stringify([...new Set(exposed)].sort()) !== JSON.stringify(expected)) {
    problems.add(DOCKERFILE, 'EXPOSE', `exposes ${JSON.stringify(exposed)}; the services' public listeners are ${JSON.stringify(expected)}`)
  }
}

/** `dist/x/y.js` comes from `x/y.ts`, which exists and which tsconfig.build.json compiles. */
export function checkEntryPoint (entry: string, where: string, facts: CodeFacts, problems: Problems, expectedSource?: string): void {
  const source = /^dist\/(.+)\.js$/.exec(entry)?.[1]
  if (source === undefined) {
    problems.add(DOCKERFILE, where, `${entry} is not a compiled entry point (dist/…/*.js)`)
    return
  }
  const ts = `${source}.ts`
  if (expectedSource !== undefined && ts !== expectedSource) problems.add(DOCKERFILE, where, `runs ${entry}; expected ${distPathOf(expectedSource)}`)
  if (!facts.sourceExists(ts)) problems.add(DOCKERFILE, where, `${entry}: its source ${ts} does not exist`)
  if (!facts.buildInclude.includes(ts.split('/')[0] as string)) problems.add(DOCKERFILE, where, `${entry}: ${ts} is outside tsconfig.build.json's "include", so it is never compiled`)
}
