// ESLint: typescript-eslint's recommended rules, floating promises refused (type-aware), and the layering of
// architecture.md §2 held by a rule: kernel/, numerics/ and solvers/ import nothing from the rest of src, and
// kernel/ and numerics/ nothing from solvers/.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Every folder and root module of src, read from the tree: a folder added later is outside the pure layers too.
const srcEntries = readdirSync(join(import.meta.dirname, 'src'), { withFileTypes: true })
  .filter((e) => e.isDirectory() || e.name.endsWith('.ts'))
  .map((e) => (e.isDirectory() ? e.name : e.name.replace(/\.ts$/, '.js')));

const outside = (allowed) =>
  srcEntries.filter((dir) => !allowed.includes(dir)).flatMap((dir) => [`../${dir}`, `../${dir}/*`, `../../${dir}`, `../../${dir}/*`]);

const layer = (files, allowed, why) => ({
  files,
  rules: { 'no-restricted-imports': ['error', { patterns: [{ group: outside(allowed), message: why }] }] },
});

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'data/**', 'coverage/**', '.vitest-report.json', 'public/**', 'test-artifacts/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['*.js', 'vitest.config.ts', 'test/helpers/*.mjs'] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // Published constants (zeta zeros, RFC vectors, reference values) are quoted to the digits their sources give;
    // the parser rounds them as it should.
    files: ['src/solvers/zeta.ts', 'test/**'],
    rules: { 'no-loss-of-precision': 'off' },
  },
  {
    // Tests read JSON replies of every shape; typing each one would say nothing the assertions don't.
    files: ['test/**', 'scripts/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  layer(['src/kernel/**'], ['kernel', 'numerics'], 'kernel/ is pure: it may use numerics/, nothing else of src (architecture.md §2)'),
  layer(['src/numerics/**'], ['numerics'], 'numerics/ is pure: it imports nothing else of src (architecture.md §2)'),
  layer(['src/solvers/**'], ['solvers', 'kernel', 'numerics'], 'solvers/ depend on kernel/ and numerics/ only (architecture.md §2)'),
);
