/**
 * Two apps on one store under one receiver name (the provider's default), each with its own secret:
 * every event of both is processed exactly once, by its own app, none buried. Each app's workers
 * take the other's entries too (one queue), cannot verify them, see they were accepted by another
 * identity, and leave them, reporting the clash (outcome `conflict` / `receiver_clash`, a log line,
 * `health()`), where before they buried them dead after one attempt: lost, since GitHub-style
 * senders never redeliver. Run on SQLite and on every shared store that is up.
 */
import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openStore } from '../src/cli/stores.js';
import { createReceiver, type DeliveryResult, hmac, type Logger } from '../src/index.js';
import { dropStore } from './support/drop-store.js';
import { sharedStores } from './support/probes.js';
import { reachable } from './support/servers.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const dir = mkdtempSync(join(tmpdir(), 'onceonly-two-apps-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// Both apps receive from "acme" and so key under its name: the same default receiver name.
const provider = (secret: string) =>
  hmac<{ id: string; type: string }>({
    name: 'acme',
    secret,
    signatureHeader: 'x-sig',
    id: (e) => e.id,
    type: (e) => e.type,
  });

function delivery(id: string, secret: string): Request {
  const body = JSON.stringify({ id, type: 't' });
  return new Request('https://example.com/hooks', {
    method: 'POST',
    body,
    headers: { 'x-sig': createHmac('sha256', secret).update(body).digest('hex') },
  });
}

function app(label: string, store: Awaited<ReturnType<typeof openStore>>['store'], secret: string) {
  const ran: string[] = [];
  const outcomes: DeliveryResult[] = [];
  const lines: string[] = [];
  const logger: Logger = { warn: (m) => void lines.push(m), error: (m) => void lines.push(m) };
  const receiver = createReceiver({
    provider: provider(secret),
    store,
    inbox: { maxAttempts: 3, backoff: () => 30 },
    handler: ({ id }) => void ran.push(`${label}:${id}`),
    onOutcome: (r) => void outcomes.push(r),
    logger,
  });
  return { receiver, ran, outcomes, lines };
}

function cases(label: string, url: () => string, cleanup: (name: string) => Promise<void>) {
  describe(`two apps on one ${label} store under one receiver name`, () => {
    const name = `oo_two_apps_${randomBytes(3).toString('hex')}`;
    after(async () => {
      await cleanup(name);
      await cleanup(`${name}r`);
    });

    it("each app's events run once, by their own app; none is buried; the clash is reported", async () => {
      // Prepare: two apps, each its own store object over the same backing store and name.
      const [sa, sb] = [await openStore(url(), name), await openStore(url(), name)];
      try {
        const a = app('A', sa.store, 'secret-of-app-a');
        const b = app('B', sb.store, 'secret-of-app-b');
        for (let i = 0; i < 6; i++) {
          assert.equal((await a.receiver.fetch(delivery(`evt_a${i}`, 'secret-of-app-a'))).status, 202);
          assert.equal((await b.receiver.fetch(delivery(`evt_b${i}`, 'secret-of-app-b'))).status, 202);
        }
        // Act: A's workers drain first (they take B's entries too), then both, until all ran.
        await a.receiver.runDue();
        for (let round = 0; round < 40 && a.ran.length + b.ran.length < 12; round++) {
          await b.receiver.runDue();
          await a.receiver.runDue();
          await sleep(40);
        }
        // Assess: the fault happened (A met B's entries), and nothing was lost, doubled or buried.
        const clashes = a.outcomes.filter((o) => o.code === 'receiver_clash');
        assert.ok(clashes.length >= 1, "A's worker took B's entries");
        assert.ok(clashes.every((o) => o.outcome === 'conflict'));
        assert.deepEqual(
          a.ran.sort(),
          [0, 1, 2, 3, 4, 5].map((i) => `A:evt_a${i}`),
        );
        assert.deepEqual(
          b.ran.sort(),
          [0, 1, 2, 3, 4, 5].map((i) => `B:evt_b${i}`),
        );
        for (const o of [...a.outcomes, ...b.outcomes])
          assert.notEqual(o.outcome, 'dead', JSON.stringify(o.key));
        const stats = await sa.store.inbox!.stats({ receiver: 'acme' });
        assert.deepEqual([stats.completed, stats.dead, stats.pending], [12, 0, 0]);
        // Reported: one log line (not one per take), and health() says so.
        const logged = a.lines.filter((l) => /another app under the receiver name acme/.test(l));
        assert.equal(logged.length, 1, a.lines.join('\n'));
        const health = await a.receiver.health();
        assert.equal(health.ok, false);
        assert.match(
          health.checks.find((c) => c.name === 'inbox-receivers')?.detail ?? '',
          /give each app its own receiver name/,
        );
      } finally {
        await sa.close();
        await sb.close();
      }
    });

    it('a rotation is not a clash: entries accepted before the new secret came first still run', async () => {
      const [before, afterRotation] = [
        await openStore(url(), `${name}r`),
        await openStore(url(), `${name}r`),
      ];
      try {
        const old = app('old', before.store, 'secret-before-rotation');
        for (let i = 0; i < 3; i++) {
          assert.equal(
            (await old.receiver.fetch(delivery(`evt_r${i}`, 'secret-before-rotation'))).status,
            202,
          );
        }
        // The app restarted with the new secret first (its identity changed), the old one kept.
        const ran: string[] = [];
        const rotated = createReceiver({
          provider: hmac<{ id: string; type: string }>({
            name: 'acme',
            secret: ['secret-after-rotation', 'secret-before-rotation'],
            signatureHeader: 'x-sig',
            id: (e) => e.id,
            type: (e) => e.type,
          }),
          store: afterRotation.store,
          inbox: true,
          handler: ({ id }) => void ran.push(id ?? ''),
          logger: false,
        });
        assert.equal(await rotated.runDue(), 3);
        assert.deepEqual(ran.sort(), ['evt_r0', 'evt_r1', 'evt_r2']);
        assert.equal(
          (await rotated.health()).checks.some((c) => c.name === 'inbox-receivers'),
          false,
        );
      } finally {
        await before.close();
        await afterRotation.close();
      }
    });
  });
}

cases(
  'SQLite',
  () => join(dir, 'two-apps.db'),
  async () => {},
);
for (const [label, url, probe] of sharedStores) {
  if (await reachable(`two apps on ${label}`, url, probe)) {
    cases(
      label,
      () => url,
      (name) => dropStore(url, name),
    );
  }
}
