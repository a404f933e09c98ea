/**
 * What the inbox's workers and hybrid mode must keep true, each on a real store (SQLite files) with
 * a competing worker where timing matters: retries wait the documented backoff (no more), an entry
 * whose worker died is run on its last attempt rather than buried unrun, a hybrid run holds its
 * entry for as long as it runs (not only its inline budget), and a worker never runs more entries
 * at once than its concurrency.
 */
import { strict as assert } from 'node:assert';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { createReceiver, type DeliveryResult, hmac, type Store } from '../src/index.js';
import { sqliteStorePairs } from './support/sqlite-pair.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const SECRET = 'workers-secret';

/** A SQLite store on a file of its own, and a second one on the same file (another process's). */
const stores = sqliteStorePairs('inbox-workers');

const provider = () =>
  hmac<{ id: string; type: string }>({
    name: 'acme',
    secret: SECRET,
    signatureHeader: 'x-sig',
    id: (e) => e.id,
    type: (e) => e.type,
  });

function delivery(id: string): Request {
  const body = JSON.stringify({ id, type: 't' });
  return new Request('https://example.com/hooks', {
    method: 'POST',
    body,
    headers: { 'x-sig': createHmac('sha256', SECRET).update(body).digest('hex') },
  });
}

describe('inbox workers', () => {
  it('a failed run is retried after the documented backoff, initial × 2^(n-1) with full jitter (half to all of it)', async () => {
    // Prepare: backoff 1 s initial; a handler that always fails.
    const [store] = stores();
    const results: DeliveryResult[] = [];
    const receiver = createReceiver({
      provider: provider(),
      store,
      inbox: { backoff: { initial: '1s', max: '1h' }, maxAttempts: 10 },
      handler: () => {
        throw new Error('down');
      },
      onOutcome: (r) => void results.push(r),
      logger: false,
    });
    // Act: 20 entries, each failing once.
    for (let i = 0; i < 20; i++) await receiver.fetch(delivery(`evt_b${i}`));
    const before = Date.now();
    assert.equal(await receiver.runDue(), 20);
    const after = Date.now();
    // Assess: every retry is due between half and all of 1 s after its failure, never later.
    const failed = results.filter((r) => r.outcome === 'failed');
    assert.equal(failed.length, 20);
    for (const r of failed) {
      const wait = r.inbox!.nextAttemptAt!.getTime();
      assert.ok(wait >= before + 500 - 50, `due ${wait - before} ms after the run began`);
      assert.ok(wait <= after + 1_000 + 50, `due ${wait - after} ms after the run ended`);
    }
  });

  it('an entry whose worker died on its next-to-last attempt is run on its last, not buried unrun', async () => {
    // Prepare: two attempts allowed; a worker takes the entry (attempt 1) and dies.
    const [store, other] = stores();
    const runs: number[] = [];
    const make = (s: Store) =>
      createReceiver({
        provider: provider(),
        store: s,
        lease: '300ms',
        timeout: '200ms',
        inbox: { maxAttempts: 2 },
        handler: ({ attempt }) => void runs.push(attempt),
        logger: false,
      });
    await make(store).fetch(delivery('evt_died'));
    const [job] = await other.inbox!.take({ limit: 1, leaseMs: 300, receiver: 'acme' });
    assert.equal(job?.lease.attempt, 1, 'the fault: a worker took it, then died');
    await sleep(450);
    // Act: another worker finds its lease run out.
    assert.equal(await make(store).runDue(), 1);
    // Assess: run once, at attempt 2, and completed.
    assert.deepEqual(runs, [2]);
    assert.equal((await store.inbox!.get('acme:evt_died'))?.state, 'completed');
  });

  it('hybrid: the accepting request holds its entry for as long as its run goes on, past the inline budget', async () => {
    // Prepare: a 60 ms budget, a 1.2 s lease (renewed every 400 ms), a handler that runs 1.5 s; a
    // competing worker on the same file polls all along from the answer on.
    const [store, other] = stores();
    let runs = 0;
    const receiver = createReceiver({
      provider: provider(),
      store,
      lease: '1200ms',
      timeout: '10s',
      inbox: { inline: '60ms' },
      handler: async () => {
        runs++;
        await sleep(1_500);
      },
      logger: false,
    });
    const competitor = createReceiver({
      provider: provider(),
      store: other,
      inbox: true,
      handler: () => void runs++,
      logger: false,
    });
    // Act
    const res = await receiver.fetch(delivery('evt_hybrid'));
    assert.equal(res.status, 202, 'answered at the budget, still running');
    let taken = 0;
    const until = Date.now() + 1_600;
    while (Date.now() < until) {
      taken += await competitor.runDue();
      await sleep(30);
    }
    await sleep(200);
    // Assess: the competitor never took it; it ran once and completed.
    assert.equal(taken, 0);
    assert.equal(runs, 1);
    assert.equal((await store.inbox!.get('acme:evt_hybrid'))?.state, 'completed');
  });

  it('a worker runs at most `concurrency` handlers at once, whatever it has taken ahead', async () => {
    const [store] = stores();
    let running = 0;
    let peak = 0;
    let done = 0;
    const receiver = createReceiver({
      provider: provider(),
      store,
      inbox: true,
      handler: async () => {
        peak = Math.max(peak, ++running);
        await sleep(150);
        running--;
        done++;
      },
      logger: false,
    });
    for (let i = 0; i < 9; i++) await receiver.fetch(delivery(`evt_c${i}`));
    const worker = receiver.startWorker({ concurrency: 2, pollInterval: '20ms' });
    const deadline = Date.now() + 10_000;
    while (done < 9 && Date.now() < deadline) await sleep(20);
    await worker.stop();
    assert.equal(done, 9, 'every entry ran');
    assert.equal(peak, 2, `at most 2 at once (peak ${peak})`);
  });

  it('a worker holds up to 4 × `concurrency` ahead while its runs are short, `concurrency` ahead while they are slow, in takes of at most 2 × `concurrency`', async () => {
    // Each take's batch size (`limit`) is recorded, and after each the entries held ahead: taken,
    // their handler not started yet.
    const heldOf = async (handlerMs: number, entries: number) => {
      const [store] = stores();
      const inner = store.inbox!;
      const limits: number[] = [];
      let taken = 0;
      let started = 0;
      let held = 0;
      const inbox = {
        ...inner,
        take: async (o: Parameters<typeof inner.take>[0]) => {
          limits.push(o.limit);
          const jobs = await inner.take(o);
          taken += jobs.length;
          held = Math.max(held, taken - started);
          return jobs;
        },
      };
      let done = 0;
      const receiver = createReceiver({
        provider: provider(),
        store: { ...store, inbox },
        inbox: true,
        handler: async () => {
          started++;
          await sleep(handlerMs);
          done++;
        },
        logger: false,
      });
      for (let i = 0; i < entries; i++) await receiver.fetch(delivery(`evt_d${handlerMs}_${i}`));
      const worker = receiver.startWorker({ concurrency: 2, pollInterval: '20ms' });
      const deadline = Date.now() + 10_000;
      while (done < entries && Date.now() < deadline) await sleep(10);
      await worker.stop();
      assert.equal(done, entries, 'every entry ran');
      assert.ok(Math.max(...limits) <= 4, `takes for at most 2 × concurrency (${limits})`);
      return held;
    };
    const short = await heldOf(0, 80);
    assert.ok(short > 4, `short runs: more than 2 × concurrency held ahead (${short})`);
    assert.ok(short <= 10, `never more than concurrency + 4 × concurrency (${short})`);
    const slow = await heldOf(60, 14);
    assert.ok(slow <= 4, `slow runs: at most 2 × concurrency held (${slow})`);
  });

  it('stop() hands back every entry taken ahead and not started: pending, due at once, none leased to nobody, none run twice', async () => {
    // Prepare: concurrency 2, six entries, handlers held until released.
    const [store, other] = stores();
    const ran: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const make = (s: Store, hold: boolean) =>
      createReceiver({
        provider: provider(),
        store: s,
        inbox: true,
        handler: async ({ id }) => {
          ran.push(id!);
          if (hold) await held;
        },
        logger: false,
      });
    const receiver = make(store, true);
    for (let i = 0; i < 6; i++) await receiver.fetch(delivery(`evt_s${i}`));
    const worker = receiver.startWorker({ concurrency: 2, pollInterval: '20ms' });
    const deadline = Date.now() + 10_000;
    while ((ran.length < 2 || (await store.inbox!.stats()).processing < 4) && Date.now() < deadline)
      await sleep(10);
    assert.equal(ran.length, 2, 'two handlers running');
    assert.equal((await store.inbox!.stats()).processing, 4, 'two more taken ahead, waiting for a slot');
    // Act: stop while the two run, then let them end.
    const stopped = worker.stop();
    release();
    await stopped;
    // Assess: the two ran and completed; the two taken ahead are pending again, due now, with why.
    const stats = await store.inbox!.stats();
    assert.equal(stats.processing, 0, 'no entry left leased to a stopped worker');
    assert.equal(stats.completed, 2);
    assert.equal(stats.pending, 4);
    const pending = await store.inbox!.list({ state: 'pending' });
    const back = pending.filter((e) => e.lastError !== undefined);
    assert.equal(back.length, 2, 'two handed back');
    for (const e of back) {
      assert.match(e.lastError!, /handed back unrun: its worker stopped/);
      assert.ok(e.dueAt.getTime() <= Date.now(), 'due at once');
    }
    // ... and another worker runs the four left, each once.
    assert.equal(await make(other, false).runDue(), 4);
    assert.deepEqual([...ran].sort(), ['evt_s0', 'evt_s1', 'evt_s2', 'evt_s3', 'evt_s4', 'evt_s5']);
  });

  it('stop() during a take out past its store deadline waits for it to land and its entries to be handed back: none left leased to nobody', async () => {
    // Prepare: a take the store answers after 300 ms, past its 200 ms deadline (a slow statement);
    // the worker gives up on it at the deadline, and the take still leases its entries when it lands.
    // (stop() waits for it one more deadline at most, till 400 ms: a take of 400 ms raced that bound.)
    const [base] = stores();
    const inner = base.inbox!;
    let out = 0;
    const store: Store = {
      ...base,
      inbox: {
        ...inner,
        take: async (options) => {
          out++;
          try {
            await sleep(300);
            return await inner.take(options);
          } finally {
            out--;
          }
        },
      },
    };
    const receiver = createReceiver({
      provider: provider(),
      store,
      storeTimeout: '200ms',
      inbox: true,
      handler: () => {},
      logger: false,
    });
    for (let i = 0; i < 3; i++) await receiver.fetch(delivery(`evt_l${i}`));
    const worker = receiver.startWorker({ concurrency: 2, pollInterval: '5s' });
    await sleep(250); // the first take past its deadline, still out
    assert.equal(out, 1, 'a take still out past its deadline');
    // Act
    await worker.stop();
    // Assess: the take had landed when stop() resolved, and what it leased was handed back.
    assert.equal(out, 0, 'no take still out when stop() resolved');
    const stats = await inner.stats();
    assert.equal(stats.processing, 0, `no entry left leased to nobody (${JSON.stringify(stats)})`);
    assert.equal(stats.pending, 3);
  });

  it('an entry taken ahead whose lease ran out while it waited for a slot is not run by the worker that took it: the run that took it over is the only one', async () => {
    // Prepare: concurrency 1, lease 300 ms; the first entry's handler holds the slot while the
    // process stalls past the lease of the entry taken ahead behind it.
    const [store, other] = stores();
    const ran: [string, number][] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const make = (s: Store) =>
      createReceiver({
        provider: provider(),
        store: s,
        lease: '300ms',
        timeout: '10s',
        inbox: true,
        handler: async ({ id, attempt }) => {
          ran.push([id!, attempt]);
          if (id === 'evt_t0' && attempt === 1) await held;
        },
        logger: false,
      });
    const receiver = make(store);
    await receiver.fetch(delivery('evt_t0'));
    await receiver.fetch(delivery('evt_t1'));
    const worker = receiver.startWorker({ concurrency: 1, pollInterval: '10s' });
    const deadline = Date.now() + 10_000;
    while (ran.length < 1 && Date.now() < deadline) await sleep(10);
    assert.equal((await store.inbox!.stats()).processing, 2, 'evt_t1 taken ahead');
    // Act: this process stalls past the lease of evt_t1 (its event loop blocked: the keeper that
    // extends the entries held ahead cannot run); before it resumes another worker takes evt_t1
    // over and runs it (and evt_t0, whose heartbeats stalled too); then the first run ends.
    const stalled = Date.now() + 450;
    while (Date.now() < stalled) {
      // blocked
    }
    assert.equal(await make(other).runDue(), 2);
    release();
    while ((await store.inbox!.stats()).completed < 2 && Date.now() < deadline) await sleep(10);
    await worker.stop();
    // Assess: evt_t1 ran once, by the takeover (attempt 2); the stalled worker never ran it.
    assert.deepEqual(ran, [
      ['evt_t0', 1],
      ['evt_t0', 2],
      ['evt_t1', 2],
    ]);
    assert.equal((await store.inbox!.get('acme:evt_t1'))?.state, 'completed');
  });

  for (const [handlerMs, bound, what] of [
    [60, 4, 'twice `concurrency` while runs are slow'],
    [0, 10, '5 × `concurrency` (it and 4 × ahead) while runs are short'],
  ] as const)
    it(`a slot frees when its handler ends, the entry's complete still in flight; handlers and completes in flight at most ${what}`, async () => {
      // Prepare: completes held at the store until released; concurrency 2, fourteen entries.
      const entries = 14;
      const [base] = stores();
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let completing = 0;
      let peak = 0;
      const completed: boolean[] = [];
      const store: Store = {
        ...base,
        inbox: {
          ...base.inbox!,
          complete: async (lease, options) => {
            peak = Math.max(peak, ++completing);
            await held;
            completing--;
            const done = await base.inbox!.complete(lease, options);
            completed.push(done);
            return done;
          },
          // The worker's completes in one call where the store can: held alike, each lease counted.
          completeMany: async (leases, options) => {
            completing += leases.length;
            peak = Math.max(peak, completing);
            await held;
            completing -= leases.length;
            const done = await base.inbox!.completeMany!(leases, options);
            completed.push(...done);
            return done;
          },
        },
      };
      let started = 0;
      const receiver = createReceiver({
        provider: provider(),
        store,
        inbox: true,
        handler: async () => {
          started++;
          if (handlerMs > 0) await sleep(handlerMs);
        },
        logger: false,
      });
      for (let i = 0; i < entries; i++) await receiver.fetch(delivery(`evt_f${handlerMs}_${i}`));
      // Act: a worker runs them while no complete lands.
      const worker = receiver.startWorker({ concurrency: 2, pollInterval: '20ms' });
      const deadline = Date.now() + 10_000;
      while (started < bound && Date.now() < deadline) await sleep(10);
      await sleep(100 + 2 * handlerMs);
      // Assess: `bound` handlers ran (two slots, each freed at its handler's end), then no more:
      // `bound` runs between handler start and complete landed is the bound.
      assert.equal(started, bound, `${bound} handlers ran with no complete landed`);
      assert.ok(peak >= 1 && peak <= bound, `at most ${bound} completes out (${peak} at the store)`);
      release();
      while (completed.length < entries && Date.now() < deadline) await sleep(10);
      await worker.stop();
      // Each complete presented its own lease and landed.
      assert.deepEqual(completed, Array(entries).fill(true));
      assert.equal((await base.inbox!.stats()).completed, entries);
    });
});

describe('inbox workers over a store that fails while it still notifies', () => {
  it('a failed take waits out its poll interval: notifications meanwhile do not make it take again', async () => {
    // Prepare: a store whose take always fails, and whose watch says "due" every 5 ms.
    const [base] = stores();
    const inner = base.inbox!;
    let takes = 0;
    let beat: ReturnType<typeof setInterval> | undefined;
    const inbox: typeof inner = {
      ...inner,
      accept: (input, options) => inner.accept(input, options),
      take: async () => {
        takes++;
        throw new Error('the database is overloaded');
      },
      watch: (_receiver, { due }) => {
        beat = setInterval(due, 5);
        return () => clearInterval(beat);
      },
    };
    const receiver = createReceiver({
      provider: provider(),
      store: { ...base, inbox },
      inbox: {},
      logger: false,
      handler: () => {},
    });
    // Act
    const worker = receiver.startWorker({ concurrency: 2, pollInterval: '1h' });
    await sleep(300);
    await worker.stop();
    // Assess: the watch kept notifying; one take, then the back-off; stop() still ended it at once.
    assert.ok(beat !== undefined, 'the worker watched the store');
    assert.equal(takes, 1, `${takes} takes in 300 ms`);
  });
});
