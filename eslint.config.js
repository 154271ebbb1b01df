import neostandard from 'neostandard'

// One linter and formatter for the whole tree: neostandard (standard's rules for
// ESLint 9 flat config) with its TypeScript support, run by `npm test`.
export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'dist-bench/**', 'bench/results/**', 'coverage/**', '.tap/**'] })
]
