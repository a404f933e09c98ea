#!/usr/bin/env node
// The on-demand workspaces: what only some suites or the benchmarks need lives in a package.json of
// its own beside them, out of the root install (its weight: see README, Development). Node and
// TypeScript resolve a workspace's packages from the files inside its folder, so only those files
// import them; the root tsconfig leaves those folders out and each workspace's own tsconfig checks
// them once it is installed.
//
//   node scripts/workspaces.mjs install <dir>...  installs those not yet installed
//   node scripts/workspaces.mjs typecheck         the root tsconfig, then each installed workspace's
//                                                 (CI installs them all, so all are checked there)
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export const workspaces = {
  'test/runtimes': "the cross-runtime suites' workspace (Next.js, Bun, Deno, workerd)",
  'test/sdks': 'the provider SDKs the signature suites check against (Stripe, Twilio, Adyen, Shopify, ...)',
  'test/types': 'the TypeScript compilers the published types are checked under (TypeScript 5 and 7)',
  'test/browser': "the console's real-browser suite (playwright-core; the browser is the system's Chromium)",
  bench: "the benchmarks' baselines (the Stripe SDK, autocannon, Powertools, mitata)",
  'test/better-sqlite3':
    "better-sqlite3, a native build: Node.js 20's SQLite client (22.16+ have node:sqlite)",
  'test/nodes':
    'the newer Node lines the suites also run on (node22, node24: `node scripts/test.mjs --node 22`)',
};

/** The workspace's dependencies that are not installed (all of them before the first install). */
export function missing(dir) {
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  return Object.keys(manifest.devDependencies).filter(
    (name) => !existsSync(join(dir, 'node_modules', name, 'package.json')),
  );
}

/** Installs the workspace unless it is; false if npm failed. */
export function install(dir) {
  const absent = missing(dir);
  if (absent.length === 0) return true;
  console.log(`installing ${workspaces[dir] ?? dir}: ${dir} (${absent.join(', ')})…`);
  const npm = spawnSync('npm', ['install', '--prefix', dir, '--prefer-offline', '--no-audit', '--no-fund'], {
    stdio: 'inherit',
  });
  if (npm.status === 0) return true;
  console.log(`✖ installing ${dir} failed: run npm install --prefix ${dir}`);
  return false;
}

function tsc(project) {
  console.log(`tsc -p ${project} --noEmit`);
  return spawnSync('npx', ['tsc', '-p', project, '--noEmit'], { stdio: 'inherit' }).status === 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [command, ...dirs] = process.argv.slice(2);
  if (command === 'install') {
    process.exit(dirs.map(install).every(Boolean) ? 0 : 1);
  } else if (command === 'typecheck') {
    let ok = tsc('tsconfig.json');
    for (const dir of Object.keys(workspaces)) {
      if (!existsSync(join(dir, 'tsconfig.json'))) continue;
      const absent = missing(dir);
      if (absent.length > 0) {
        console.log(`skipped ${dir}/tsconfig.json: its workspace is not installed (npm run typecheck after`);
        console.log(`  node scripts/workspaces.mjs install ${dir}, as .ci/run does)`);
        continue;
      }
      ok = tsc(join(dir, 'tsconfig.json')) && ok;
    }
    process.exit(ok ? 0 : 1);
  } else {
    console.error('usage: node scripts/workspaces.mjs install <dir>... | typecheck');
    process.exit(2);
  }
}
