#!/usr/bin/env node
// Runs every *.test.ts under src/ and test/ with node's own test runner (TypeScript through tsx).
// Usage: npm test [-- file-or-folder ...]
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function collect(path, out) {
  if (statSync(path).isDirectory()) {
    for (const name of readdirSync(path)) {
      if (name === 'node_modules' || name === 'fixtures') continue;
      collect(join(path, name), out);
    }
  } else if (/\.test\.ts$/.test(path)) out.push(path);
  return out;
}

const args = process.argv.slice(2);
const roots = args.length > 0 ? args : ['src', 'test'];
const files = roots.flatMap((root) => collect(root, [])).sort();
if (files.length === 0) {
  console.error('onceonly: no test files found under ' + roots.join(', '));
  process.exit(1);
}
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=2', ...files],
  { stdio: 'inherit', env: { ...process.env } },
);
process.exit(result.status ?? 1);
