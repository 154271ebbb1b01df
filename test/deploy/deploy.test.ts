import t from 'tap'
import {
  checkAllClaimed, checkCompose, checkDashboards, checkDockerfile, checkKubernetes, checkNoCommittedSecrets, checkReadme, checkSecretScanning, checkShellScripts, checkVerifyExamples,
  loadCodeFacts, loadDeployTree, Problems, REPO_ROOT, type DeployTree
} from './checker/index.js'

/**
 * deploy/ must stay in step with the code: every file parses, and the image, compose
 * and Kubernetes run the real entry points with environments the services' own
 * loaders accept, on the ports those make them listen on, probing routes they really
 * serve. drift.test.ts proves each check fails on a drifted copy.
 */
const facts = await loadCodeFacts()
t.teardown(() => facts.close())
const parsing = new Problems()
const tree: DeployTree = loadDeployTree(REPO_ROOT, parsing)

function report (problems: Problems): string {
  return problems.lines.length === 0 ? 'no drift' : `drift:\n  ${problems.lines.join('\n  ')}`
}

t.test('every file in deploy/ is of a known type and parses', async (t) => {
  t.same(parsing.lines, [], report(parsing))
  t.ok(tree.files.size >= 10, `${tree.files.size} files read`)
})

const CHECKS: Array<[string, (problems: Problems) => void]> = [
  ['the Dockerfile: multi-stage, non-root, production deps with native rebuilds, real entry points, health check, exposed ports',
    (p) => { checkDockerfile(tree, facts, p) }],
  ['compose.yaml: commands, env names, ports, health paths, addresses, volumes, the load balancer and the upstreams file',
    (p) => { checkCompose(tree, facts, p) }],
  ['the Kubernetes base: kustomization lists every manifest; containers, probes, Services, scaling, single writer, network policy',
    (p) => { checkKubernetes(tree, facts, p) }],
  ['no committed file holds a credential; the secret files are gitignored',
    (p) => { checkNoCommittedSecrets(tree, p) }],
  ['the Grafana dashboards: a uid, a title and panels',
    (p) => { checkDashboards(tree, p) }],
  ['the verify API\'s proxy examples ask their own shape; the ones the tests run keep their placeholders',
    (p) => { checkVerifyExamples(tree, p) }],
  ['the secret scanning rules for API keys are there',
    (p) => { checkSecretScanning(tree, p) }],
  ['the secret-making script and deploy/README.md cover every file',
    (p) => {
      checkShellScripts(tree, p)
      checkReadme(tree, p)
    }],
  // Last: the checks above claim the files they read.
  ['no file in deploy/ goes unchecked', (p) => { checkAllClaimed(tree, p) }]
]

for (const [name, check] of CHECKS) {
  t.test(name, async (t) => {
    const problems = new Problems()
    check(problems)
    t.same(problems.lines, [], report(problems))
  })
}
