/**
 * `npm test` itself (scripts/test.mjs): no file can hang the run. A stuck file is killed at its
 * deadline and fails by name with the output it printed; a file that passes but leaves a handle
 * and a process holding its output open still ends the run in seconds; a suite declared after a
 * top-level await still runs.
 */
import { strict as assert } from 'node:assert';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = new URL('..', import.meta.url).pathname;

async function npmTest(env: Record<string, string>, ...paths: string[]) {
  const t0 = Date.now();
  try {
    const { stdout } = await run(process.execPath, ['scripts/test.mjs', ...paths], {
      cwd: root,
      env: { ...process.env, ...env },
      timeout: 60_000,
    });
    return { code: 0, stdout, seconds: (Date.now() - t0) / 1000 };
  } catch (error) {
    const e = error as { code: number; stdout: string };
    return { code: e.code, stdout: e.stdout, seconds: (Date.now() - t0) / 1000 };
  }
}

describe('npm test (scripts/test.mjs)', () => {
  it('kills a file past its deadline and fails the run naming it, with what it printed', async () => {
    // 8 s: the hang fixture must start (tsx) and report its first test first, on a loaded host too.
    const r = await npmTest(
      { TEST_FILE_TIMEOUT_MS: '8000' },
      'test/fixtures/runner/hang.test.ts',
      'test/fixtures/runner/pass.test.ts',
    );
    assert.equal(r.code, 1);
    assert.match(r.stdout, /✔ reports this one/);
    assert.match(r.stdout, /test\/fixtures\/runner\/hang\.test\.ts: did not finish in 8 s and was killed/);
    assert.match(r.stdout, /✔ passes/, 'the other file still ran');
    assert.ok(r.seconds < 25, `ended in ${r.seconds} s`);
  });

  it('stops at the run budget and names the files it never started', async () => {
    const r = await npmTest(
      { TEST_TOTAL_TIMEOUT_MS: '3000', TEST_CONCURRENCY: '1' },
      'test/fixtures/runner/hang.test.ts',
      'test/fixtures/runner/pass.test.ts',
    );
    assert.equal(r.code, 1);
    assert.match(r.stdout, /hang\.test\.ts was killed when the run passed its budget/);
    assert.match(r.stdout, /never started:\n {2}test\/fixtures\/runner\/pass\.test\.ts/);
  });

  it('a budget that runs out while a file is bundled: the file never starts, and is named so', async () => {
    const r = await npmTest({ TEST_TOTAL_TIMEOUT_MS: '1' }, 'test/fixtures/runner/pass.test.ts');
    assert.equal(r.code, 1);
    assert.doesNotMatch(r.stdout, /✔/, 'no test ran');
    assert.match(r.stdout, /never started:\n {2}test\/fixtures\/runner\/pass\.test\.ts/);
  });

  it('runs a suite declared after a top-level await that outlasts the first suite (--test-force-exit skipped it silently)', async () => {
    const r = await npmTest({}, 'test/fixtures/runner/late-suite.test.ts');
    assert.equal(r.code, 0, r.stdout);
    assert.match(r.stdout, /✔ runs too/);
    assert.match(r.stdout, /1 files, 2 tests: 2 passed, 0 failed/);
  });

  it('does not wait for a handle or a process left holding the output of a passing file', async () => {
    const r = await npmTest({}, 'test/fixtures/runner/leak.test.ts', 'test/fixtures/runner/pass.test.ts');
    assert.equal(r.code, 0, r.stdout);
    assert.match(r.stdout, /⚠ test\/fixtures\/runner\/leak\.test\.ts left a process behind/);
    assert.match(r.stdout, /2 files, 2 tests: 2 passed, 0 failed/);
    assert.ok(r.seconds < 15, `ended in ${r.seconds} s`);
  });
});
