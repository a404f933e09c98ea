/**
 * `onceonly inbox` against real stores: a receiver in inbox mode accepts events (one completes, one
 * fails its only attempt and is dead, one waits), then the CLI, in its own process, shows the counts,
 * lists dead first, shows an entry with its signature redacted, requeues the dead one (its attempt
 * count is kept: it never goes back), and purges nothing that is not completed past retention.
 */
import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openStore } from '../../src/cli/stores.js';
import { hasUnsafe } from '../../src/core/text.js';
import { createReceiver, hmac } from '../../src/index.js';
import { runCli } from '../support/cli.js';
import { dropStore } from '../support/drop-store.js';
import { sharedStores } from '../support/probes.js';
import { reachable } from '../support/servers.js';

const dir = mkdtempSync(join(tmpdir(), 'onceonly-cli-inbox-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const cli = (...args: string[]) => runCli(['inbox', ...args]);

const SECRET = 'cli-inbox-secret';
const provider = () =>
  hmac<{ id: string; type: string }>({
    name: 'acme',
    secret: SECRET,
    signatureHeader: 'x-acme-signature',
    id: (event) => event.id,
    type: (event) => event.type,
  });

function signed(id: string): Request {
  const body = JSON.stringify({ id, type: 'order.paid' });
  return new Request('http://localhost/hooks', {
    method: 'POST',
    body,
    headers: { 'x-acme-signature': createHmac('sha256', SECRET).update(body).digest('hex') },
  });
}

function cases(label: string, url: () => string, cleanup: (name: string) => Promise<void>) {
  describe(`onceonly inbox on ${label}`, () => {
    const name = `oo_cli_inbox_${randomBytes(3).toString('hex')}`;
    after(() => cleanup(name));

    it('counts, lists dead first, shows, requeues and purges', async () => {
      const opened = await openStore(url(), name);
      try {
        // The tables made and the pool connected first, as an app's start-up or migration would:
        // else the first accept ran the CREATE TABLEs on a cold pool within the receiver's 3 s
        // storeTimeout (10 times a plain accept's work), which a loaded host overran (503).
        await opened.store.inbox!.stats();
        const receiver = createReceiver({
          name: 'acme',
          provider: provider(),
          store: opened.store,
          inbox: { maxAttempts: 1 },
          handler: ({ id }) => {
            if (id === 'evt_bad') throw new Error('the payment service said no');
          },
          logger: false,
        });
        for (const id of ['evt_good', 'evt_bad'])
          assert.equal((await receiver.fetch(signed(id))).headers.get('onceonly-outcome'), 'accepted');
        assert.equal(await receiver.runDue(), 2);
        assert.equal((await receiver.fetch(signed('evt_wait'))).headers.get('onceonly-outcome'), 'accepted');
      } finally {
        await opened.close();
      }

      const overview = await cli('--store', url(), '--name', name, '--json');
      assert.equal(overview.code, 0, overview.stderr);
      const stats = JSON.parse(overview.stdout);
      assert.deepEqual(
        [stats.pending, stats.processing, stats.completed, stats.dead],
        [1, 0, 1, 1],
        overview.stdout,
      );
      assert.deepEqual(
        stats.deadEntries.map((e: { key: string }) => e.key),
        ['acme:evt_bad'],
      );
      const text = await cli('--store', url(), '--name', name);
      assert.match(text.stdout, /dead \(kept, not retried\)\s+1/);
      assert.match(text.stdout, /last error: .*the payment service said no/);

      const list = JSON.parse((await cli('--store', url(), '--name', name, '--json', 'list')).stdout);
      assert.deepEqual(list.map((e: { key: string; state: string }) => [e.key, e.state]).slice(0, 2), [
        ['acme:evt_bad', 'dead'],
        ['acme:evt_wait', 'pending'],
      ]);

      const shown = JSON.parse(
        (await cli('--store', url(), '--name', name, '--json', 'show', 'acme:evt_bad')).stdout,
      );
      assert.equal(shown.state, 'dead');
      assert.equal(shown.attempts, 1);
      const signature = shown.delivery.headers.find(([n]: [string, string]) => n === 'x-acme-signature');
      assert.deepEqual(signature, ['x-acme-signature', '(64 characters)'], 'the signature is never printed');

      const missing = await cli('--store', url(), '--name', name, 'show', 'acme:evt_never');
      assert.equal(missing.code, 1);
      assert.match(missing.stdout, /no entry "acme:evt_never"/);

      const notDead = await cli('--store', url(), '--name', name, 'retry', 'acme:evt_good');
      assert.equal(notDead.code, 1);
      assert.match(notDead.stdout, /is neither dead nor waiting for a later attempt: nothing requeued/);
      const retried = await cli('--store', url(), '--name', name, 'retry', 'acme:evt_bad');
      assert.equal(retried.code, 0, retried.stderr);
      assert.match(retried.stdout, /requeued acme:evt_bad: due now/);
      const again = JSON.parse(
        (await cli('--store', url(), '--name', name, '--json', 'show', 'acme:evt_bad')).stdout,
      );
      assert.equal(again.state, 'pending');
      assert.equal(again.attempts, 1, 'the attempt count is kept: the next run is attempt 2');
      assert.equal(
        JSON.parse((await cli('--store', url(), '--name', name, '--json', 'retry', '--dead')).stdout)
          .requeued,
        0,
      );

      const purged = JSON.parse((await cli('--store', url(), '--name', name, '--json', 'purge')).stdout);
      assert.equal(purged.purged, 0, 'nothing is completed past its retention yet');
      const after = JSON.parse((await cli('--store', url(), '--name', name, '--json')).stdout);
      assert.deepEqual([after.pending, after.completed, after.dead, after.deadEntries.length], [2, 1, 0, 0]);
    });

    it('prints stored text inert and shows only allow-listed header values (credentials masked, whatever their name)', async () => {
      // Prepare: an entry whose signed type and handler error carry terminal sequences, and whose
      // stored headers carry the credentials a name pattern missed (Okta, PayPal, Plaid) and more.
      const hostileType = 'order.paid\x1b[2J\x1b]0;owned\x07\r\nfake line\u2028';
      const hostileError = 'declined\x1b[31m\rdead     acme:evt_forged\u202e';
      const secrets = {
        'x-okta-hook-auth': 'okta-shared-secret-in-clear',
        'paypal-transmission-sig': 'cGF5cGFsLXNpZ25hdHVyZQ==',
        'plaid-verification': 'eyJhbGciOiJFUzI1NiJ9.plaid.jwt',
        authorization: 'Bearer sk_live_never_shown',
        cookie: 'session=never_shown',
      };
      const key = 'hostile:evt_hostile';
      const opened = await openStore(url(), name);
      try {
        const inbox = opened.store.inbox!;
        await inbox.accept({
          key,
          receiver: 'hostile',
          fingerprint: 'f'.repeat(64),
          type: hostileType,
          id: 'evt_hostile',
          body: new TextEncoder().encode('{}'),
          headers: [['content-type', 'application/json'], ...Object.entries(secrets)],
          url: 'https://user:url-password-never-shown@example.com/hooks?token=url-token-never-shown&route=1',
          receivedAt: new Date(),
        });
        const [job] = await inbox.take({ limit: 10, leaseMs: 60_000, receiver: 'hostile' });
        assert.equal(job?.key, key, 'the entry was taken');
        assert.equal(await inbox.bury(job.lease, { error: hostileError }), true);
      } finally {
        await opened.close();
      }
      // Act: what an operator runs.
      const outputs = [
        await cli('--store', url(), '--name', name, '--receiver', 'hostile'),
        await cli('--store', url(), '--name', name, 'list', '--state', 'dead', '--receiver', 'hostile'),
        await cli('--store', url(), '--name', name, 'show', key),
        await cli('--store', url(), '--name', name, '--json', 'show', key),
      ];
      // Assess: the fault is there (the entry is shown, dead, with its error), and inert.
      for (const out of outputs) {
        assert.equal(out.code, 0, out.stderr);
        assert.equal(hasUnsafe(out.stdout.replaceAll('\n', '')), false, out.stdout);
        assert.doesNotMatch(out.stdout, /^fake line|^dead +acme:evt_forged/m, 'no line faked');
        for (const value of [
          ...Object.values(secrets),
          'url-password-never-shown',
          'url-token-never-shown',
        ]) {
          assert.ok(!out.stdout.includes(value), `${value} printed`);
        }
      }
      assert.match(outputs[1]!.stdout, /order\.paid\\x1b\[2J/);
      assert.match(outputs[1]!.stdout, /last error: declined\\x1b\[31m\\rdead/);
      const shown = JSON.parse(outputs[3]!.stdout);
      assert.equal(
        shown.delivery.url,
        'https://(credentials hidden)@example.com/hooks?token=(21 characters)&route=(1 characters)',
      );
      assert.deepEqual(Object.fromEntries(shown.delivery.headers), {
        'content-type': 'application/json',
        ...Object.fromEntries(Object.entries(secrets).map(([n, v]) => [n, `(${v.length} characters)`])),
      });
    });

    it("retry --dead --receiver requeues that receiver's dead entries only", async () => {
      // Prepare: one dead entry for each of two receivers.
      const opened = await openStore(url(), name);
      try {
        const inbox = opened.store.inbox!;
        for (const receiver of ['billing', 'shipping']) {
          await inbox.accept({
            key: `${receiver}:evt_dead`,
            receiver,
            fingerprint: 'f'.repeat(64),
            body: new TextEncoder().encode('{}'),
            headers: [],
            receivedAt: new Date(),
          });
          const [job] = await inbox.take({ limit: 1, leaseMs: 60_000, receiver });
          assert.ok(job && (await inbox.bury(job.lease, { error: 'failed' })), `${receiver}'s entry is dead`);
        }
      } finally {
        await opened.close();
      }
      // Act
      const retried = await cli(
        '--store',
        url(),
        '--name',
        name,
        '--json',
        'retry',
        '--dead',
        '--receiver',
        'billing',
      );
      // Assess: one requeued, billing's; shipping's still dead.
      assert.equal(retried.code, 0, retried.stderr);
      assert.equal(JSON.parse(retried.stdout).requeued, 1);
      const state = async (key: string) =>
        JSON.parse((await cli('--store', url(), '--name', name, '--json', 'show', key)).stdout).state;
      assert.equal(await state('billing:evt_dead'), 'pending');
      assert.equal(await state('shipping:evt_dead'), 'dead');
    });

    it('never creates a table or key space it is pointed at: a wrong --name is an error', async () => {
      const wrong = await cli('--store', url(), '--name', `${name}_nope`, '--json');
      if (label === 'Redis') {
        // Redis has no tables: an empty key space reads as an empty inbox.
        assert.equal(wrong.code, 0, wrong.stderr);
        assert.deepEqual(JSON.parse(wrong.stdout).pending, 0);
      } else {
        assert.notEqual(wrong.code, 0, wrong.stdout);
        assert.match(wrong.stderr, /^onceonly: /);
      }
    });
  });
}

cases(
  'SQLite',
  () => join(dir, 'inbox.db'),
  async () => {},
);
for (const [label, url, probe] of sharedStores) {
  if (await reachable(`inbox CLI on ${label}`, url, probe)) {
    cases(
      label,
      () => url,
      (name) => dropStore(url, name),
    );
  }
}
