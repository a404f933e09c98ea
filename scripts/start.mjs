#!/usr/bin/env node
// `npm start`: the demo from the sources (`onceonly demo`, through tsx), flags passed on
// (`npm start -- --events 300`). Its default store is a SQLite file the worker processes share:
// Node.js 22.16 and later open it with their built-in node:sqlite; before that it takes better-sqlite3,
// which the root install leaves out (a native build), from the on-demand workspace test/better-sqlite3,
// installed here on first use (scripts/better-sqlite3.mjs resolves it there).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { install } from './workspaces.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const [major, minor] = process.versions.node.split('.').map(Number);
const env = { ...process.env };
if ((major < 22 || (major === 22 && minor < 16)) && install('test/better-sqlite3')) {
  // In NODE_OPTIONS, so the demo's worker processes have it too.
  const hook = `--import=${pathToFileURL(join(root, 'scripts/better-sqlite3.mjs')).href}`;
  env.NODE_OPTIONS = [env.NODE_OPTIONS, hook].filter(Boolean).join(' ');
}
const demo = spawn(
  process.execPath,
  ['--import', 'tsx', join(root, 'src/cli/index.ts'), 'demo', ...process.argv.slice(2)],
  { stdio: 'inherit', env },
);
// Ctrl-C reaches the demo too (one process group): it stops its workers and reports; wait for it.
process.on('SIGINT', () => {});
demo.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
