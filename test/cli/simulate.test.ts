import { strict as assert } from 'node:assert';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { cliPath } from '../support/cli.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);
const cli = [cliPath];

describe('onceonly simulate against the Express example app', () => {
  let app: ChildProcess;
  let url = '';
  const secret = 'simulate-test-secret';

  before(async () => {
    app = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], {
      cwd: join(root, 'examples/express'),
      env: { ...process.env, PORT: '0', GITHUB_WEBHOOK_SECRET: secret },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    url = await new Promise<string>((resolve, reject) => {
      let out = '';
      app.stdout!.on('data', (chunk: Buffer) => {
        out += chunk;
        const match = /listening on (http:\/\/\S+)/.exec(out);
        if (match) resolve(match[1]!);
      });
      app.on('exit', (code) => reject(new Error(`example exited with ${code}: ${out}`)));
    });
    app.stdout!.resume();
  });

  after(() => {
    app.kill('SIGKILL');
  });

  it('delivers every event with duplicates and concurrent copies, all acknowledged once', async () => {
    const { stdout } = await run(
      process.execPath,
      [
        ...cli,
        'simulate',
        '--url',
        url,
        '--provider',
        'github',
        '--secret',
        secret,
        '--events',
        '60',
        '--json',
      ],
      { cwd: root, timeout: 120_000 },
    );
    const report = JSON.parse(stdout);
    assert.equal(report.events, 60);
    assert.equal(report.acknowledged, 60);
    assert.deepEqual(report.gaveUp, []);
    assert.ok(report.byOutcome.processed === 60, `processed ${report.byOutcome.processed}`);
    assert.ok(report.byOutcome.duplicate > 0, 'duplicates were suppressed');
    assert.ok(report.deliveries > 60);
  });

  it('reports a wrong secret as never acknowledged and exits non-zero', async () => {
    await assert.rejects(
      run(
        process.execPath,
        [
          ...cli,
          'simulate',
          '--url',
          url,
          '--provider',
          'github',
          '--secret',
          'wrong',
          '--events',
          '3',
          '--max-attempts',
          '2',
          '--concurrent-rate',
          '0',
          '--json',
        ],
        {
          cwd: root,
          timeout: 60_000,
        },
      ),
      (error: { code?: number; stdout?: string }) => {
        assert.equal(error.code, 1);
        const report = JSON.parse(error.stdout!);
        assert.equal(report.gaveUp.length, 3);
        assert.equal(report.byStatus['401'], 6);
        assert.deepEqual(report.byCode, { invalid_signature: 6 }, 'the rejection code, not only its status');
        assert.equal(report.withOutcomeHeader, 6);
        return true;
      },
    );
    // The table names the code, and has no "is this receiver onceonly?" note: the header was there.
    await assert.rejects(
      run(
        process.execPath,
        [...cli, 'simulate', '--url', url, '--provider', 'github', '--secret', 'wrong'].concat([
          '--events',
          '2',
          '--max-attempts',
          '1',
          '--concurrent-rate',
          '0',
          '--duplicate-rate',
          '0',
        ]),
        { cwd: root, timeout: 60_000 },
      ),
      (error: { code?: number; stdout?: string }) => {
        assert.equal(error.code, 1);
        assert.match(error.stdout!, /rejected \(4xx\)\s+2 \(invalid_signature 2\)/);
        assert.doesNotMatch(error.stdout!, /is this receiver onceonly/);
        return true;
      },
    );
  });

  it('explains a missing flag in one line with exit code 2', async () => {
    await assert.rejects(
      run(process.execPath, [...cli, 'simulate', '--secret', 'x'], { cwd: root }),
      (error: { code?: number; stderr?: string }) => {
        assert.equal(error.code, 2);
        assert.equal(error.stderr?.trim().split('\n').length, 1);
        assert.match(error.stderr!, /^onceonly: --url is required/);
        return true;
      },
    );
  });
});

describe('onceonly simulate --type', () => {
  it('sends the event types asked for, taken in turn, and notes a receiver that answers without Onceonly-Outcome', async () => {
    // A plain receiver (not onceonly): records each delivery's type and answers 200.
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(String(req.headers['x-github-event']));
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const { stdout } = await run(
        process.execPath,
        [...cli, 'simulate', '--url', `http://127.0.0.1:${port}/`, '--provider', 'github'].concat([
          '--secret',
          's',
          '--type',
          'push, issues',
          '--events',
          '4',
          '--concurrent-rate',
          '0',
          '--duplicate-rate',
          '0',
        ]),
        { cwd: root, timeout: 60_000 },
      );
      assert.deepEqual(seen.sort(), ['issues', 'issues', 'push', 'push']);
      assert.match(stdout, /no Onceonly-Outcome headers seen: is this receiver onceonly\?/);
    } finally {
      server.close();
    }
  });
});
