import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openStore } from '../../src/cli/stores.js';
import { cliArgv, root, run } from '../support/cli.js';
import { dropStore } from '../support/drop-store.js';
import { sharedStores } from '../support/probes.js';
import { reachable } from '../support/servers.js';

const dir = mkdtempSync(join(tmpdir(), 'onceonly-inspect-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const skew = join(root, 'test/faults/support/skew.mjs');

/** Runs `onceonly inspect`; `skewMs` shifts the CLI process's clock (a host whose clock drifted). */
async function cli(...args: string[]) {
  return skewedCli(0, ...args);
}

async function skewedCli(skewMs: number, ...args: string[]) {
  const { stdout } = await run(process.execPath, cliArgv(['inspect', ...args], skewMs ? [skew] : []), {
    cwd: root,
    timeout: 60_000,
    env: { ...process.env, ONCEONLY_SKEW_MS: String(skewMs) },
  });
  return stdout;
}

/**
 * Seeds one live lease, one lease that ran out, one completed key, one key past retention, and one
 * released (its handler failed) after the others' leases ended.
 */
async function seed(url: string, name: string) {
  const opened = await openStore(url, name);
  const { store } = opened;
  await store.claim('live', { leaseMs: 600_000, fingerprint: 'ab'.repeat(32) });
  await store.claim('stuck', { leaseMs: 50 });
  const done = await store.claim('done', { leaseMs: 600_000 });
  if (done.status === 'acquired') await store.confirm(done.lease, { retentionMs: 600_000 });
  await store.record('gone', { retentionMs: 50 });
  await new Promise((resolve) => setTimeout(resolve, 300));
  const failed = await store.claim('failed', { leaseMs: 600_000, fingerprint: 'cd'.repeat(32) });
  if (failed.status === 'acquired') await store.release(failed.lease);
  return opened;
}

function cases(label: string, url: () => string, cleanup: (name: string) => Promise<void>) {
  describe(`onceonly inspect on ${label}`, () => {
    const name = `oo_inspect_${randomBytes(3).toString('hex')}`;
    after(() => cleanup(name));

    it('shows counts by state and the oldest leases', async () => {
      const opened = await seed(url(), name);
      await opened.close();
      const report = JSON.parse(await cli('--store', url(), '--name', name, '--json'));
      assert.deepEqual(report.stats, { processing: 1, takeable: 2, completed: 1 });
      assert.deepEqual(
        report.oldestLeases.map((l: { key: string; state: string }) => [l.key, l.state]),
        [
          ['stuck', 'takeable'],
          ['failed', 'released'],
          ['live', 'processing'],
        ],
      );
      const text = await cli('--store', url(), '--name', name);
      assert.match(text, /takeable \(released: handler failed; lease ran out: crash\?\)\s+2/);
      assert.match(
        text,
        /\n {2}failed {2}attempt 1 {2}released \d+ (ms|s) ago {2}takeable now: the next claim gets attempt 2/,
      );
    });

    it("shows one key's state, attempt, lease and fingerprint", async () => {
      const live = JSON.parse(await cli('--store', url(), '--name', name, '--json', 'live'));
      assert.equal(live.state, 'processing');
      assert.equal(live.attempt, 1);
      assert.equal(live.fingerprint, 'ab'.repeat(32));
      assert.match(live.expires, /^expires in/);
      assert.match(live.lease, /^lease renewed \d+ (ms|s) ago$/);
      assert.ok(live.renewedAgoMs >= 0 && live.renewedAgoMs < 600_000, String(live.renewedAgoMs));
      const done = JSON.parse(await cli('--store', url(), '--name', name, '--json', 'done'));
      assert.match(done.lease, /^completed \d+ (ms|s) ago$/);
      const stuck = JSON.parse(await cli('--store', url(), '--name', name, '--json', '--key', 'stuck'));
      assert.equal(stuck.state, 'takeable');
      assert.match(stuck.expires, /^expired /);
      const failed = JSON.parse(await cli('--store', url(), '--name', name, '--json', 'failed'));
      assert.equal(failed.state, 'released');
      assert.equal(failed.attempt, 1);
      assert.equal(failed.fingerprint, 'cd'.repeat(32));
      assert.match(failed.lease, /^released \d+ (ms|s) ago$/);
      assert.equal(failed.expires, 'takeable now: the next claim gets attempt 2');
      assert.equal(
        JSON.parse(await cli('--store', url(), '--name', name, '--json', 'nothing')).state,
        'absent',
      );
    });

    // SQLite's clock is the host's own: only the shared stores have a clock of their own.
    if (label !== 'SQLite')
      it("reads live and expired on the store's clock, whatever this host's clock says", async () => {
        for (const skewMs of [3_600_000, -3_600_000]) {
          const live = JSON.parse(
            await skewedCli(skewMs, '--store', url(), '--name', name, '--json', 'live'),
          );
          assert.equal(live.state, 'processing', `clock ${skewMs} ms off`);
          assert.match(live.expires, /^expires in (9|10) min$/);
          const stuck = JSON.parse(
            await skewedCli(skewMs, '--store', url(), '--name', name, '--json', 'stuck'),
          );
          assert.equal(stuck.state, 'takeable', `clock ${skewMs} ms off`);
          const report = JSON.parse(await skewedCli(skewMs, '--store', url(), '--name', name, '--json'));
          assert.deepEqual(report.stats, { processing: 1, takeable: 2, completed: 1 });
          const failed = JSON.parse(
            await skewedCli(skewMs, '--store', url(), '--name', name, '--json', 'failed'),
          );
          assert.equal(failed.state, 'released', `clock ${skewMs} ms off`);
          assert.ok(
            live.renewedAgoMs >= 0 && live.renewedAgoMs < 600_000,
            `renewed ${live.renewedAgoMs} ms ago, clock ${skewMs} ms off`,
          );
        }
      });

    it('takes the prefix as configured, trailing colon or not, and fails loudly on a name matching nothing', async () => {
      const withColon = JSON.parse(await cli('--store', url(), '--name', `${name}:`, '--json'));
      assert.deepEqual(withColon.stats, { processing: 1, takeable: 2, completed: 1 });
      await assert.rejects(
        cli('--store', url(), '--name', `${name}_nothing`, '--json'),
        (error: { code?: number; stderr?: string }) => {
          assert.notEqual(error.code, 0);
          assert.match(error.stderr ?? '', /^onceonly: /);
          assert.match(error.stderr ?? '', new RegExp(`${name}_nothing`));
          return true;
        },
      );
    });

    it("finds a key by the provider's delivery id, shows durations for people, and fails on an unknown id", async () => {
      const opened = await openStore(url(), name);
      await opened.store.record('stripe:evt_inspect_by_id', { retentionMs: 600_000 });
      await opened.close();
      const found = JSON.parse(
        await cli('--store', url(), '--name', name, '--json', '--id', 'evt_inspect_by_id'),
      );
      assert.equal(found.key, 'stripe:evt_inspect_by_id');
      assert.equal(found.state, 'completed');
      const text = await cli('--store', url(), '--name', name, 'live');
      assert.doesNotMatch(text, /renewedAgoMs/);
      assert.match(text, /lease renewed \d+ (ms|s) ago/);
      await assert.rejects(
        cli('--store', url(), '--name', name, '--id', 'evt_never_sent'),
        (error: { code?: number; stdout?: string }) => {
          assert.equal(error.code, 1);
          assert.match(
            error.stdout ?? '',
            /evt_never_sent: no key for this id \(tried evt_never_sent, stripe:evt_never_sent/,
          );
          return true;
        },
      );
    });

    it('purges what is past retention where the store keeps rows', async () => {
      const out = JSON.parse(await cli('--store', url(), '--name', name, '--json', 'purge'));
      assert.equal(typeof out.purged, 'number');
      if (!url().startsWith('redis')) assert.ok(out.purged >= 1, `purged ${out.purged}`);
    });
  });
}

cases(
  'SQLite',
  () => join(dir, 'inspect.db'),
  async () => {},
);

describe('onceonly inspect errors', () => {
  it('never creates what it inspects: a missing SQLite file is an error, and stays missing', async () => {
    const path = join(dir, 'not-there.db');
    await assert.rejects(cli('--store', path, 'some-key'), (error: { code?: number; stderr?: string }) => {
      assert.equal(error.code, 2);
      assert.match(error.stderr?.trim() ?? '', /^onceonly: cannot open the SQLite file .*not-there\.db/);
      assert.equal(error.stderr?.trim().split('\n').length, 1, 'one line');
      return true;
    });
    assert.equal(existsSync(path), false);
  });

  it('shows a key literally named purge with --key', async () => {
    const opened = await openStore(join(dir, 'purge-key.db'), 'onceonly');
    await opened.store.record('purge', { retentionMs: 600_000 });
    await opened.close();
    const shown = JSON.parse(await cli('--store', join(dir, 'purge-key.db'), '--json', '--key', 'purge'));
    assert.equal(shown.key, 'purge');
    assert.equal(shown.state, 'completed');
  });

  it('needs --store, in one line with exit code 2', async () => {
    await assert.rejects(cli(), (error: { code?: number; stderr?: string }) => {
      assert.equal(error.code, 2);
      assert.equal(
        error.stderr?.trim(),
        'onceonly: --store is required, e.g. --store postgres://localhost/app',
      );
      return true;
    });
  });
});

for (const [label, url, probe] of sharedStores) {
  if (await reachable(`inspect on ${label}`, url, probe)) {
    cases(
      label,
      () => url,
      (name) => dropStore(url, name),
    );
  }
}
