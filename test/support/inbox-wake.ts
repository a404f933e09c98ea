/**
 * The inbox's watch (`inbox.watch`) end to end on a real server, one spec for the stores that have
 * one (PostgreSQL LISTEN/NOTIFY, Redis pub/sub): an idle worker polling once an hour runs a delivery
 * accepted through another store object over another client (as another process would) at once;
 * its watch connection killed, it opens a new one and later deliveries still run, none twice; a
 * delivery for one receiver never runs another's handler; closing the store releases the
 * connection. Every wait is bounded: without the watch these fail, they never hang.
 */
import { strict as assert } from 'node:assert';
import { after, describe, it } from 'node:test';
import { createReceiver, type Store } from '../../src/index.js';
import { acmeDelivery, acme as acmeOf } from './acme.js';

const SECRET = 'inbox-wake-secret';
const BOUND_MS = 10_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface WakeSpecOptions {
  /** A store object over a client of its own (closed by the spec's `after`), on the test's inbox. */
  store(): Store;
  /** The ids of the open watch connections of this test's inbox (backend pids, client ids). */
  watchers(): Promise<string[]>;
  /** Kills one of them; true when the server says it did. */
  kill(id: string): Promise<boolean>;
  /**
   * Whether the store hears its watch connection drop (and reports it like a take failure); false
   * for a client that opens it again by itself without saying so (postgres.js).
   * @default true
   */
  reportsDrops?: boolean;
}

/** Waits until `check` holds, at most {@link BOUND_MS}; fails naming `what` past that. */
async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + BOUND_MS;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`not within ${BOUND_MS / 1000} s: ${what}`);
    await sleep(10);
  }
}

export function inboxWakeSpec(label: string, options: WakeSpecOptions): void {
  describe(`the inbox watch over ${label}`, () => {
    const closing: (() => Promise<unknown>)[] = [];
    after(async () => {
      for (const close of closing.reverse()) await close().catch(() => undefined);
    });

    /** A receiver named `name` over `store`, counting its runs by event id. */
    const receiverOn = (store: Store, name: string, runs: Map<string, number>) =>
      createReceiver({
        name,
        provider: acmeOf(SECRET),
        store,
        inbox: true,
        logger: false,
        handler: ({ event }) => {
          runs.set(event.id, (runs.get(event.id) ?? 0) + 1);
        },
      });
    const deliver = (id: string) => acmeDelivery(SECRET, JSON.stringify({ id, type: 'thing.created' }));
    const fresh = () => {
      const store = options.store();
      closing.push(() => store.close());
      return store;
    };

    it('an idle worker polling once an hour runs a delivery another process accepted, at once, and ends its watch with its stop', async () => {
      // Prepare: a worker on one store object, idle, watching; the accepting side has its own client.
      const runs = new Map<string, number>();
      const before = new Set(await options.watchers());
      const worker = receiverOn(fresh(), 'wake', runs).startWorker({ pollInterval: '1h' });
      await until('the worker watches', async () => (await options.watchers()).some((w) => !before.has(w)));
      const accepting = receiverOn(fresh(), 'wake', new Map());

      // Act
      const answer = await accepting.fetch(deliver('evt_1'));

      // Assess: run without waiting for an hour's poll.
      assert.equal(answer.status, 202);
      await until('the worker ran the delivery', () => runs.get('evt_1') === 1);
      await worker.stop();
      await until('the stopped worker no longer watches', async () =>
        (await options.watchers()).every((w) => before.has(w)),
      );
      assert.deepEqual([...runs], [['evt_1', 1]]);
    });

    it('a killed watch connection is opened again: a later delivery still runs, and nothing runs twice', async () => {
      // Prepare
      const runs = new Map<string, number>();
      const failures: unknown[] = [];
      const before = new Set(await options.watchers());
      const receiver = createReceiver({
        name: 'killed',
        provider: acmeOf(SECRET),
        store: fresh(),
        inbox: true,
        logger: false,
        onOutcome: (result) => {
          if (result.outcome === 'store-unavailable') failures.push(result);
        },
        handler: ({ event }) => {
          runs.set(event.id, (runs.get(event.id) ?? 0) + 1);
        },
      });
      const worker = receiver.startWorker({ pollInterval: '1h' });
      let first: string[] = [];
      await until('the worker watches', async () => {
        first = (await options.watchers()).filter((w) => !before.has(w));
        return first.length === 1;
      });
      const accepting = receiverOn(fresh(), 'killed', new Map());
      assert.equal((await accepting.fetch(deliver('evt_before'))).status, 202);
      await until('the delivery before the kill ran', () => runs.get('evt_before') === 1);

      // Act 1: the watch connection is killed.
      assert.equal(await options.kill(first[0]!), true, 'the server killed the watch connection');
      // Assess 1: the kill landed, was reported like a take failure, and a new connection watches.
      await until(
        'the killed connection is gone',
        async () => !(await options.watchers()).includes(first[0]!),
      );
      if (options.reportsDrops !== false) await until('the drop is reported', () => failures.length > 0);
      await until('a new connection watches', async () =>
        (await options.watchers()).some((w) => !before.has(w) && w !== first[0]),
      );

      // Act 2
      assert.equal((await accepting.fetch(deliver('evt_after'))).status, 202);

      // Assess 2
      await until('the delivery after the kill ran', () => runs.get('evt_after') === 1);
      await sleep(100);
      await worker.stop();
      assert.deepEqual(
        [...runs].sort(),
        [
          ['evt_after', 1],
          ['evt_before', 1],
        ],
        'each ran once',
      );
    });

    it('a failed run retried without delay runs again at once (the retry tells the watchers too)', async () => {
      // Prepare: a handler that fails its first run, retried with no backoff.
      const attempts: number[] = [];
      const before = new Set(await options.watchers());
      const receiver = createReceiver({
        name: 'retried',
        provider: acmeOf(SECRET),
        store: fresh(),
        inbox: { backoff: () => 0 },
        logger: false,
        handler: ({ attempt }) => {
          attempts.push(attempt);
          if (attempt === 1) throw new Error('the API said 502');
        },
      });
      const worker = receiver.startWorker({ pollInterval: '1h' });
      await until('the worker watches', async () => (await options.watchers()).some((w) => !before.has(w)));

      // Act
      assert.equal((await receiverOn(fresh(), 'retried', new Map()).fetch(deliver('evt_r'))).status, 202);

      // Assess
      await until('the second attempt ran', () => attempts.length === 2);
      await worker.stop();
      assert.deepEqual(attempts, [1, 2]);
    });

    it("a delivery for one receiver runs its handler, never the other receiver's on the same store", async () => {
      // Prepare: two receivers (two key spaces) with workers over one store object.
      const store = fresh();
      const runsA = new Map<string, number>();
      const runsB = new Map<string, number>();
      const before = new Set(await options.watchers());
      const workerA = receiverOn(store, 'wake-a', runsA).startWorker({ pollInterval: '1h' });
      const workerB = receiverOn(store, 'wake-b', runsB).startWorker({ pollInterval: '1h' });
      await until('the workers watch', async () => (await options.watchers()).some((w) => !before.has(w)));
      const newOnes = (await options.watchers()).filter((w) => !before.has(w));
      assert.equal(newOnes.length, 1, 'one watch connection for the store, shared by its workers');
      const acceptingB = receiverOn(fresh(), 'wake-b', new Map());

      // Act
      assert.equal((await acceptingB.fetch(deliver('evt_b'))).status, 202);

      // Assess
      await until("b's worker ran it", () => runsB.get('evt_b') === 1);
      await sleep(100);
      await workerA.stop();
      await workerB.stop();
      assert.deepEqual([...runsA], [], "a's handler never ran");
      assert.deepEqual([...runsB], [['evt_b', 1]]);
    });

    it('closing the store releases its watch connection, even with a worker still watching', async () => {
      // Prepare
      const store = fresh();
      const before = new Set(await options.watchers());
      const worker = receiverOn(store, 'closed', new Map()).startWorker({ pollInterval: '1h' });
      await until('the worker watches', async () => (await options.watchers()).some((w) => !before.has(w)));

      // Act
      await store.close();

      // Assess: gone from the server; the worker then stops as usual.
      await until('the watch connection is released', async () =>
        (await options.watchers()).every((w) => before.has(w)),
      );
      await worker.stop();
    });
  });
}
