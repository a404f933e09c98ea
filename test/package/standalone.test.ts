/**
 * The first minutes of a package user, outside this repository: `npm i onceonly` (the packed
 * tarball, offline) into an empty `npm init -y` project under the system's temporary folder, where
 * no node_modules above can lend a package, then `npx onceonly ...` on the Node.js running this file
 * (CI runs this suite on every supported line).
 *
 * - The install brings onceonly and nothing else.
 * - `npx onceonly demo` runs and holds: on node:sqlite's SQLite file where the runtime has it
 *   (22.16+), else on the memory store with one line saying why.
 * - `npx onceonly example` runs the quick start; with `--serve` its signed curl is answered processed,
 *   then duplicate.
 * - A store whose driver is not installed is one line naming the package, exit 2, no stack trace.
 */
import { strict as assert } from 'node:assert';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'onceonly-standalone-'));
/** Node 22.16 and later have the node:sqlite the store takes (isTransaction); 20 has none. */
const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
const hasNodeSqlite = major > 22 || (major === 22 && minor >= 16);
/** This file's Node first on the PATH, so npx and the bin's `#!/usr/bin/env node` run on it. */
const env = {
  // The user's shell: none of the npm_* settings of the npm running this suite (npm test sets
  // dozens, .ci/run npm_config_build_from_source, which npx would warn about on stderr).
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name))),
  PATH: `${dirname(process.execPath)}:${process.env.PATH}`,
  NODE_OPTIONS: '',
  // The user's machine: no CI switches, no test hooks.
  CI: '',
};

function npx(args: string[], timeout = 180_000) {
  return spawnSync('npx', ['--offline', '--no', 'onceonly', ...args], {
    cwd: dir,
    env,
    encoding: 'utf8',
    timeout,
  });
}

before(() => {
  assert.ok(
    existsSync(join(root, 'dist', 'cli', 'index.js')),
    'onceonly: dist/ is not built: run `npm run build` first (`npm test` does)',
  );
  const packed = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], {
      cwd: root,
      encoding: 'utf8',
    }),
  ) as { filename: string }[];
  execFileSync('npm', ['init', '-y'], { cwd: dir, env, stdio: 'ignore' });
  execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', join(dir, packed[0]!.filename)], {
    cwd: dir,
    env,
    stdio: 'pipe',
    timeout: 240_000,
  });
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe(`npm i onceonly, then npx onceonly, on Node.js ${process.versions.node}`, () => {
  it('installs onceonly and nothing else', () => {
    assert.ok(!existsSync(join(dir, '..', 'node_modules')), 'no node_modules above the project');
    const installed = readdirSync(join(dir, 'node_modules')).filter((name) => !name.startsWith('.'));
    assert.deepEqual(installed, ['onceonly']);
  });

  it(`runs the demo right away (${hasNodeSqlite ? 'node:sqlite, several processes' : 'the memory store'})`, () => {
    const demo = npx(['demo', '--events', '60', '--timeout', '1000', '--json']);
    assert.equal(
      demo.status,
      0,
      `demo exited ${demo.status}:\n${demo.stderr}\n${demo.stdout.slice(0, 2000)}`,
    );
    const report = JSON.parse(demo.stdout) as {
      events: number;
      eventsLost: number;
      effectsAppliedTwice: number;
      store?: string;
      notes: string[];
    };
    assert.equal(report.events, 60);
    assert.equal(report.store, hasNodeSqlite ? 'sqlite (temporary file)' : 'memory');
    assert.equal(report.eventsLost, 0);
    assert.equal(report.effectsAppliedTwice, 0);
    assert.doesNotMatch(demo.stderr, /ExperimentalWarning|\n\s+at /, 'no warning, no stack trace');
    if (hasNodeSqlite) assert.doesNotMatch(demo.stderr, /memory store/);
    else
      assert.match(
        demo.stderr,
        /^onceonly: no SQLite here \(Node\.js 22\.16\+ has it built in, or npm install better-sqlite3\): the demo runs on the memory store$/m,
      );
  });

  it('runs the quick start example, and serves it for a signed curl by hand', async () => {
    const scripted = npx(['example']);
    assert.equal(scripted.status, 0, scripted.stderr);
    assert.match(scripted.stdout, /evt_1 retried \(duplicate\)\s+200\s+duplicate/);
    assert.match(scripted.stdout, /events lost 0, effects applied twice 0/);
    const serving = spawn('npx', ['--offline', '--no', 'onceonly', 'example', '--serve'], { cwd: dir, env });
    try {
      let out = '';
      const curl = await new Promise<string>((resolve, reject) => {
        serving.stdout.on('data', (chunk: Buffer) => {
          out += chunk;
          const line = /^\s+curl .*$/m.exec(out)?.[0];
          if (line) resolve(line);
        });
        serving.once('exit', (code) => reject(new Error(`example --serve exited ${code}: ${out}`)));
      });
      // The printed curl, sent as curl would: its URL, headers and body.
      const url = /curl -si (\S+)/.exec(curl)![1]!;
      const headers = Object.fromEntries(
        [...curl.matchAll(/-H '([^:]+): ([^']*)'/g)].map((m) => [m[1]!, m[2]!] as const),
      );
      const body = /-d '(.*)'$/.exec(curl)![1]!;
      const outcomes = [];
      for (let i = 0; i < 2; i++) {
        const res = await fetch(url, { method: 'POST', headers, body });
        outcomes.push(`${res.status} ${res.headers.get('onceonly-outcome')}`);
      }
      assert.deepEqual(outcomes, ['200 processed', '200 duplicate']);
    } finally {
      serving.kill('SIGINT');
    }
  });

  const missing: [string, string][] = [
    ['redis://127.0.0.1:6379', 'redis'],
    ['postgres://postgres@127.0.0.1:5432/test', 'pg'],
    ['mysql://root@127.0.0.1:3306/test', 'mysql2'],
  ];
  for (const [url, pkg] of missing) {
    it(`names the package for a store whose driver is not installed: ${pkg}`, () => {
      const inspect = npx(['inspect', '--store', url]);
      assert.equal(inspect.status, 2, inspect.stderr);
      assert.equal(inspect.stderr, `onceonly: this store needs the ${pkg} package: npm install ${pkg}\n`);
    });
  }

  it('opens a SQLite file where the runtime can, else names what it needs', () => {
    const path = join(dir, 'claims.db');
    const inspect = npx(['inspect', '--store', path, 'some-key']);
    if (hasNodeSqlite) {
      // No such file: inspect never creates one.
      assert.equal(inspect.status, 2, inspect.stderr);
      assert.match(inspect.stderr, /^onceonly: cannot open the SQLite file .*claims\.db: no such file\n$/);
    } else {
      assert.equal(inspect.status, 2, inspect.stderr);
      assert.equal(
        inspect.stderr,
        'onceonly: a SQLite store needs Node.js 22.16 or later (node:sqlite) or the better-sqlite3 package: npm install better-sqlite3\n',
      );
    }
    assert.equal(existsSync(path), false);
  });
});
