/**
 * A receiver in inbox mode end to end over a store, one spec for every store: a signed delivery is
 * accepted (202) into the store's inbox and nothing runs until a worker asks; `runDue()` then runs
 * it, a failure is retried at attempt 2, the key stays deduplicated throughout, and another body
 * under the same id is a conflict. Then a hybrid receiver (inline budget) with a worker loop.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { createReceiver, type Store } from '../../src/index.js';
import { acmeDelivery, acme as acmeOf } from './acme.js';

const SECRET = 'inbox-receiver-secret';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const acme = () => acmeOf(SECRET);
const delivery = (body: string) => acmeDelivery(SECRET, body);

/**
 * Registers the spec. `store(name)` returns a store of its own for each test (a fresh table or
 * prefix), over the real server.
 */
export function inboxReceiverSpec(label: string, store: (name: string) => Store): void {
  describe(`a receiver in inbox mode over ${label}`, () => {
    it('accepts into the store, runs the entry through runDue(), retries a failure at attempt 2', async () => {
      // Prepare: a handler that fails its first run.
      const s = store('retry');
      const inbox = s.inbox!;
      const runs: { id: string; attempt: number; body: string }[] = [];
      const receiver = createReceiver({
        provider: acme(),
        store: s,
        inbox: { backoff: () => 0 },
        logger: false,
        handler: ({ event, attempt, delivery: d }) => {
          runs.push({ id: event.id, attempt, body: Buffer.from(d.rawBody).toString() });
          if (attempt === 1) throw new Error('the API said 502');
        },
      });
      const body = JSON.stringify({ id: 'evt_1', type: 'thing.created', note: 'ünïcødé ✓' });

      // Act 1: the delivery is accepted and nothing runs.
      const first = await receiver.fetch(delivery(body));
      const again = await receiver.fetch(delivery(body));
      const other = await receiver.fetch(
        delivery(JSON.stringify({ id: 'evt_1', type: 'thing.created', n: 2 })),
      );
      // Assess 1
      assert.equal(first.status, 202);
      assert.equal(first.headers.get('onceonly-outcome'), 'accepted');
      assert.equal(again.status, 200);
      assert.equal(again.headers.get('onceonly-outcome'), 'duplicate');
      assert.equal(other.headers.get('onceonly-outcome'), 'conflict');
      assert.equal(runs.length, 0, 'nothing runs before a worker asks');
      const entry = await inbox.get('acme:evt_1');
      assert.equal(entry?.state, 'pending');
      assert.equal(Buffer.from(entry!.delivery!.body).toString(), body);

      // Act 2: the first run fails and is retried (backoff 0), the second completes.
      assert.equal(await receiver.runDue(), 1);
      await sleep(20);
      assert.equal(await receiver.runDue(), 1);
      assert.equal(await receiver.runDue(), 0);
      // Assess 2
      assert.deepEqual(
        runs.map((r) => [r.id, r.attempt]),
        [
          ['evt_1', 1],
          ['evt_1', 2],
        ],
      );
      assert.ok(
        runs.every((r) => r.body === body),
        'the handler sees the exact bytes',
      );
      const done = await inbox.get('acme:evt_1');
      assert.equal(done?.state, 'completed');
      assert.equal(done?.attempts, 2);
      assert.match(done?.lastError ?? '', /the API said 502/);
      assert.equal((await receiver.fetch(delivery(body))).headers.get('onceonly-outcome'), 'duplicate');
      assert.deepEqual(
        { ...(await inbox.stats({ receiver: 'acme' })), oldestDueMs: 0 },
        { pending: 0, processing: 0, completed: 1, dead: 0, scheduled: 0, oldestDueMs: 0 },
      );
    });

    it('hybrid: a fast handler answers processed inline; a slow one is accepted and finished by a worker', async () => {
      // Prepare
      const s = store('hybrid');
      const ran: string[] = [];
      const receiver = createReceiver({
        provider: acme(),
        store: s,
        // Budgets far apart, so a loaded machine cannot push the fast run past its budget.
        inbox: { inline: '1500ms' },
        logger: false,
        handler: async ({ event }) => {
          if (event.type === 'slow') await sleep(3_000);
          ran.push(event.id);
        },
      });
      // Act
      const fast = await receiver.fetch(delivery(JSON.stringify({ id: 'evt_fast', type: 'fast' })));
      const slow = await receiver.fetch(delivery(JSON.stringify({ id: 'evt_slow', type: 'slow' })));
      const worker = receiver.startWorker({ pollInterval: '50ms' });
      // The slow run goes on in the accepting request, not in the worker: wait for its completion
      // in the store (the handler returns before the store marks the entry completed).
      const completed = async () =>
        (await Promise.all(['evt_fast', 'evt_slow'].map((id) => s.inbox!.get(`acme:${id}`)))).every(
          (e) => e?.state === 'completed',
        );
      for (let i = 0; i < 200 && !(await completed()); i++) await sleep(50);
      await worker.stop();
      // Assess: the slow one ran once, under the lease the accepting request took (no worker took it).
      assert.equal(fast.headers.get('onceonly-outcome'), 'processed');
      assert.equal(slow.headers.get('onceonly-outcome'), 'accepted');
      assert.deepEqual(ran.sort(), ['evt_fast', 'evt_slow']);
      for (const id of ['evt_fast', 'evt_slow']) {
        // The handler has returned; its run completes the entry a store round trip later.
        let entry = await s.inbox!.get(`acme:${id}`);
        for (let i = 0; i < 250 && entry?.state === 'processing'; i++) {
          await sleep(20);
          entry = await s.inbox!.get(`acme:${id}`);
        }
        assert.equal(entry?.state, 'completed');
        assert.equal(entry?.attempts, 1);
      }
    });
  });
}
