import neostandard from 'neostandard'

// One linter and formatter for the whole tree: neostandard (standard's rules for
// ESLint 9 flat config) with its TypeScript support, run by `npm test`.
export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'dist-bench/**', 'bench/results/**', 'coverage/**', '.tap/**'] }),
  {
    rules: {
      // A TypeBox schema and its static type share one name (`const User = Type.Object(…)`,
      // `type User = Static<typeof User>`): TypeScript keeps values and types apart.
      '@typescript-eslint/no-redeclare': 'off',
      // `void promise` marks a promise deliberately not awaited (a timer's tick, a
      // background retry); anywhere else `void` is still refused.
      'no-void': ['error', { allowAsStatement: true }],
      // Stop flags (`while (!stopping)`) are changed by other asynchronous work, which
      // this rule cannot see.
      'no-unmodified-loop-condition': 'off'
    }
  },
  {
    // Rules that need the types: a promise nobody awaits or handles, and one passed
    // where a callback's result is ignored (an async hook or listener whose rejection
    // would be lost), are mistakes the syntax alone cannot see.
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // tap queues a subtest it is given and awaits it itself: its promise may float.
      '@typescript-eslint/no-floating-promises': ['error', { allowForKnownSafePromises: [{ from: 'package', name: 'PromiseWithSubtest', package: '@tapjs/core' }] }],
      '@typescript-eslint/no-misused-promises': 'error'
    }
  }
]
