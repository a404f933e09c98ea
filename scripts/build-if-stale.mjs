#!/usr/bin/env node
// `npm test` and `npm pack` build first, but a build that is already up to date is skipped: CI
// builds once, then packs and tests, and a contributor who just built does not wait again. The
// build is stale when any file it reads (src/, the tsconfigs, package.json, the build scripts) is
// newer than the stamp the last build wrote. With --check it builds nothing: exit code 1 when stale
// (the CLI tests run the built CLI and use it to refuse a stale one).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const stamp = join(root, 'dist/.built');

function newest(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let latest = stat.mtimeMs;
  for (const entry of readdirSync(path)) latest = Math.max(latest, newest(join(path, entry)));
  return latest;
}

const inputs = [
  'src',
  'tsconfig.json',
  'tsconfig.build.json',
  'tsconfig.cjs.json',
  'package.json',
  'scripts/cjs-package.mjs',
].map((p) => join(root, p));
const fresh =
  existsSync(stamp) && inputs.every((p) => !existsSync(p) || newest(p) <= statSync(stamp).mtimeMs);
if (process.argv.includes('--check')) {
  process.exit(fresh ? 0 : 1);
} else if (fresh) {
  console.log('onceonly: dist/ is up to date with src/ (build skipped)');
} else {
  const build = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  process.exit(build.status ?? 1);
}
