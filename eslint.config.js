import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';
import noSilentCatch from './scripts/eslint/no-silent-catch.js';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
    },
  },
  {
    // A caught error is used, rethrown, or dropped with a comment saying why.
    files: ['src/**/*.ts'],
    plugins: { pincer: { rules: { 'no-silent-catch': noSilentCatch } } },
    rules: { 'pincer/no-silent-catch': 'error', 'no-empty': ['error', { allowEmptyCatch: false }] },
  },
  {
    // The control page's modules run in the browser.
    files: ['web/**/*.js'],
    languageOptions: { globals: globals.browser },
  },
);
