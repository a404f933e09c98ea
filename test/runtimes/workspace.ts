/**
 * The cross-runtime suites' own install: Next.js, Bun, Deno and workerd weigh ~700 MB, so they live
 * in this test workspace (test/runtimes/package.json), not in the repository's root install. `npm
 * test` installs it first when a suite of this folder runs (scripts/test.mjs), as `.ci/run` does;
 * a suite run on its own without it fails at once, saying how to install it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const workspace = fileURLToPath(new URL('.', import.meta.url));

/** The workspace's dependencies that are not installed (all of them before the first install). */
export function missingRuntimes(): string[] {
  const manifest = JSON.parse(readFileSync(`${workspace}package.json`, 'utf8')) as {
    devDependencies: Record<string, string>;
  };
  return Object.keys(manifest.devDependencies).filter(
    (name) => !existsSync(`${workspace}node_modules/${name}/package.json`),
  );
}

/** Throws, naming the command, unless the workspace is installed. */
export function requireRuntimes(): void {
  const missing = missingRuntimes();
  if (missing.length > 0)
    throw new Error(
      `onceonly: the cross-runtime suites need their workspace installed (missing: ${missing.join(', ')}): ` +
        'run `npm install --prefix test/runtimes --prefer-offline` (npm test does it for you)',
    );
}
