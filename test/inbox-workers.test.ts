/**
 * What the inbox's workers and hybrid mode must keep true, each on a real store (SQLite files) with
 * a competing worker where timing matters: retries wait the documented backoff (no more), an entry
 * whose worker died is run on its last attempt rather than buried unrun, a hybrid run holds its
 * entry for as long as it runs (not only its inline budget), and a worker never runs more entries
 * at once than its concurrency.
 */
import { strict as assert } from 'node:assert';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createReceiver, type DeliveryResult, hmac, type Store } from '../src/index.js';
import { sqliteStore } from '../src/stores/sqlite.js';
import { openSqlite } from './support/sqlite-client.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const SECRET = 'workers-secret';
const dir = mkdtempSync(join(tmpdir(), 'onceonly-inbox-workers-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** A SQLite store on a file of its own, and a second one on the same file (another process's). */
function stores(): [Store, Store] {
  const file = join(dir, `inbox-${files++}.db`);
  return [sqliteStore({ client: openSqlite(file).client }), sqliteStore({ client: openSqlite(file).client })];
}

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

  it('a worker runs at most `concurrency` entries at once, taking no more while its runs go on', async () => {
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
