/**
 * `npm run bench [-- name ...]`: runs every bench/*.bench.ts (or the named ones) one after another,
 * each in its own process so one's heap and JIT state never colours another's figures.
 * BENCH_SMALL=1 runs each quickly (smaller sizes, fewer iterations).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('.', import.meta.url));
const wanted = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.startsWith(w)))
  .sort();
// Benches of the built package (dist/) measure what users run: build it first.
if (!process.env.BENCH_NO_BUILD) {
  const build = spawnSync('npm', ['run', 'build'], { stdio: 'inherit' });
  if (build.status !== 0) process.exit(1);
}
let failed = 0;
for (const file of files) {
  console.log(`\n### ${file}\n`);
  // The runner's own --import flags (better-sqlite3 from its workspace, see scripts/better-sqlite3.mjs) go to each bench.
  const run = spawnSync(process.execPath, ['--expose-gc', ...process.execArgv, `${dir}${file}`], {
    stdio: 'inherit',
  });
  if (run.status !== 0) failed++;
}
process.exit(failed > 0 ? 1 : 0);
