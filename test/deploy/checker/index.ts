/**
 * The deploy checker: parses every file of deploy/ and checks it against the code.
 * Each check adds lines "file: place: what drifted" to a Problems; none means in step.
 */
export { loadCodeFacts, REPO_ROOT, type CodeFacts } from './code-facts.js'
export { kindOf, loadDeployTree, parseDeployFile, type DeployTree } from './deploy-files.js'
export { checkDockerfile, DOCKERFILE } from './check-dockerfile.js'
export { checkCompose, COMPOSE } from './check-compose.js'
export { checkKubernetes, KUSTOMIZATION, readKubernetes, type KubernetesInput } from './check-kubernetes.js'
export { checkAllClaimed, checkDashboards, checkNoCommittedSecrets, checkReadme, checkSecretScanning, checkShellScripts, checkVerifyExamples, MAKE_SECRETS, README } from './check-files.js'
export { parseDockerfile } from './parse-dockerfile.js'
export { Problems, type Node } from './problems.js'
