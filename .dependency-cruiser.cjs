/**
 * The architecture as rules: services stand side by side on common/, the CLI and the
 * one-command demo sit on top, tests and the benchmark sit outside the product.
 * `npm test` runs them (test/meta/dependency-rules.test.ts), and checks on a fixture tree
 * that each one catches what it forbids.
 */
const SERVICES = ['gateway', 'identity', 'console', 'upstream-mock']
const PRODUCT = '^(common|gateway|identity|console|upstream-mock|cli|demo)/'

module.exports = {
  forbidden: [
    ...SERVICES.map((service) => ({
      name: `${service}-imports-no-other-service`,
      comment: `${service}/ imports only common/ and its own files: services meet only in the contract in common/.`,
      severity: 'error',
      from: { path: `^${service}/` },
      to: { path: `^(${SERVICES.filter((other) => other !== service).join('|')})/` }
    })),
    {
      name: 'common-imports-no-service',
      comment: 'common/ is the kernel every service stands on: it knows none of them, nor what sits on top.',
      severity: 'error',
      from: { path: '^common/' },
      to: { path: '^(gateway|identity|console|upstream-mock|cli|demo|bench|test|harness)/' }
    },
    {
      name: 'services-import-no-roof',
      comment: 'The CLI and the demo sit on top of the services; nothing below imports them.',
      severity: 'error',
      from: { path: '^(common|gateway|identity|console|upstream-mock)/' },
      to: { path: '^(cli|demo)/' }
    },
    {
      name: 'only-cli-imports-commander',
      comment: 'Command-line parsing belongs to cli/ (and to the benchmark, a program of its own outside the product); services know nothing of commander.',
      severity: 'error',
      from: { pathNot: '^(cli|bench)/' },
      to: { path: 'node_modules/commander/' }
    },
    {
      name: 'product-imports-no-test-code',
      comment: 'No production file imports tests, the benchmark or their harness.',
      severity: 'error',
      from: { path: PRODUCT },
      to: { path: '^(test|bench|harness)/' }
    },
    {
      name: 'bench-imports-no-tests',
      comment: 'What the benchmark shares with the tests lives in harness/, which both may import.',
      severity: 'error',
      from: { path: '^bench/' },
      to: { path: '^test/' }
    },
    {
      name: 'no-cycles',
      comment: 'A cycle makes two modules one: load order decides what is defined.',
      severity: 'error',
      from: {},
      to: { circular: true }
    }
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // The rules' own test cases break every rule on purpose.
    exclude: { path: '^(dist|dist-bench)/|^test/meta/fixtures/architecture/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.js', '.json'] },
    moduleSystems: ['es6', 'cjs']
  }
}
