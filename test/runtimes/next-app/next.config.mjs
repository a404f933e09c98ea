import { realpathSync } from 'node:fs';
import { dirname, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

// The app imports the adapter from the repository's sources, outside this folder. Turbopack
// compiles nothing outside its root, so the root is the repository, or, in a git worktree whose
// node_modules links to another checkout's, the folder holding both.
const repo = fileURLToPath(new URL('../../../', import.meta.url));
const modules = dirname(realpathSync(`${repo}node_modules`));
const common = [];
for (const [i, part] of repo.split(sep).entries()) {
  if (modules.split(sep)[i] !== part) break;
  common.push(part);
}
const root = common.join(sep) || sep;

/** @type {import('next').NextConfig} */
export default {
  // Build output goes to the repository's ignored .tmp/, away from the typechecked and linted tree.
  // A production build (next build / next start) gets its own folder, apart from next dev's.
  distDir: process.env.ONCEONLY_NEXT_DIST ?? '../.tmp/next-app-dist',
  turbopack: { root },
  outputFileTracingRoot: root,
};
