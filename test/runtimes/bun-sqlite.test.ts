/**
 * sqliteStore on bun:sqlite: the SQLite conformance, inbox conformance and inbox-receiver suites run
 * by Bun's own test runner (its node:test support) on Bun's built-in `Database`, which
 * test/support/sqlite-client.ts picks under Bun. Bun comes from this folder's workspace.
 */
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { requireRuntimes } from './workspace.js';

requireRuntimes();
const root = fileURLToPath(new URL('../..', import.meta.url));
const bun = `${root}test/runtimes/node_modules/.bin/bun`;
const suites = ['src/stores/sqlite.test.ts', 'src/stores/sqlite-inbox.test.ts', 'test/sqlite/inbox.test.ts'];

it('the SQLite conformance, inbox conformance and inbox-receiver suites pass on bun:sqlite', async () => {
  const child = spawn(bun, ['test', '--timeout', '60000', ...suites], {
    cwd: root,
    env: { ...process.env, SQLITE_CLIENT: 'bun' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c) => (output += c));
  child.stderr.on('data', (c) => (output += c));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  // The suites ran, on Bun's client, and none failed.
  assert.match(output, /on bun \(a connection per store, one file\)/, output.slice(-3000));
  const pass = Number(/^\s*(\d+) pass$/m.exec(output)?.[1] ?? 0);
  const fail = Number(/^\s*(\d+) fail$/m.exec(output)?.[1] ?? -1);
  assert.equal(fail, 0, output.slice(-3000));
  assert.ok(pass >= 80, `${pass} tests passed: ${output.slice(-2000)}`);
  assert.equal(code, 0, output.slice(-3000));
});
