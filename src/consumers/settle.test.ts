/**
 * The consumers' shared verdict: every once() outcome mapped to ack, retry (with its delay) or dead,
 * poison messages dead-lettered (after maxAttempts failures, or redelivered past them after runs
 * that were killed, or without a key), never acknowledged after a failure; the broker's heartbeat
 * while the work runs. On the memory store and on Redis (a real claim store, its attempts kept).
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { sharedStores } from '../../test/support/probes.js';
import { reachable } from '../../test/support/servers.js';
import { openStore } from '../cli/stores.js';
import type { Store } from '../core/types.js';
import { ConfigError } from '../errors.js';
import { memoryStore } from '../stores/memory.js';
import { type ConsumerResult, consumerRunner, retryDelayOf, verdictOf } from './settle.js';

type Msg = { id: string; body: string };
const quiet = { logger: false as const };
const msg = (id: string, body = '{}'): Msg => ({ id, body });

function spec(label: string, open: () => Promise<{ store: Store; close: () => Promise<void> }>) {
  describe(`consumerRunner on ${label}`, () => {
    it('acknowledges processed and duplicate, retries a failure with its delay, dead-letters the last', async (t) => {
      const { store, close } = await open();
      t.after(close);
      const prefix = randomBytes(4).toString('hex');
      let fail = true;
      const ran: number[] = [];
      const results: string[] = [];
      const run = consumerRunner<Msg>(
        store,
        (_m, { attempt }) => {
          ran.push(attempt);
          if (fail) throw new Error(`refused on ${attempt}`);
        },
        {
          ...quiet,
          key: (m) => `${prefix}:${m.id}`,
          maxAttempts: 3,
          retryDelay: (attempt) => attempt * 100,
          onResult: (_m, r) => void results.push(r.outcome),
        },
        () => 'unused',
      );
      // Act: three failing deliveries of one message, then a fixed one of another, then its copy.
      const first = await run(msg('a'), { first: true });
      const second = await run(msg('a'), { first: false });
      const third = await run(msg('a'), { first: false });
      fail = false;
      const ok = await run(msg('b'), { first: true });
      const copy = await run(msg('b'), { first: true });
      // Assess
      assert.deepEqual(first.verdict, { action: 'retry', delayMs: 100 });
      assert.deepEqual(second.verdict, { action: 'retry', delayMs: 200 });
      assert.equal(third.verdict.action, 'dead');
      assert.match(
        (third.verdict as { reason: string }).reason,
        /failed on attempt 3 of 3: Error: refused on 3/,
      );
      assert.deepEqual(ok.verdict, { action: 'ack' });
      assert.deepEqual(copy.verdict, { action: 'ack' });
      assert.equal(copy.result.outcome, 'duplicate');
      assert.deepEqual(ran, [1, 2, 3, 1]);
      assert.deepEqual(results, ['failed', 'failed', 'failed', 'processed', 'duplicate']);
    });

    it('dead-letters without running a message redelivered after twice maxAttempts killed runs; a first delivery still runs', async (t) => {
      const { store, close } = await open();
      t.after(close);
      const key = `poison:${randomBytes(4).toString('hex')}`;
      const killed = async (k: string, runs: number) => {
        for (let i = 0; i < runs; i++) {
          const claim = await store.claim(k, { leaseMs: 30, retentionMs: 60_000 });
          assert.equal(claim.status, 'acquired', 'the run was claimed');
          await new Promise((resolve) => setTimeout(resolve, 60));
        }
      };
      // Prepare: four runs that were killed (their claims never confirmed nor released: leases ran
      // out); and another key with two, maxAttempts' worth only (a slow store can spend as many).
      await killed(key, 4);
      const spent = `${key}:spent`;
      await killed(spent, 2);
      const slow = consumerRunner<Msg>(
        store,
        () => 'ran',
        { ...quiet, maxAttempts: 2 },
        () => spent,
      );
      assert.deepEqual((await slow(msg('y'), { first: false })).verdict, { action: 'ack' }, 'it still runs');
      const ran: number[] = [];
      const run = consumerRunner<Msg>(
        store,
        (_m, { attempt }) => void ran.push(attempt),
        { ...quiet, maxAttempts: 2 },
        () => key,
      );
      // Act
      const redelivered = await run(msg('x'), { first: false });
      const redriven = await run(msg('x'), { first: true });
      // Assess
      assert.equal(redelivered.result.outcome, 'exhausted');
      assert.equal(redelivered.verdict.action, 'dead');
      assert.match((redelivered.verdict as { reason: string }).reason, /after 4 claims that never ended/);
      assert.deepEqual(
        redriven.verdict,
        { action: 'ack' },
        're-driven from the dead letters: it runs once more',
      );
      assert.deepEqual(ran, [6]);
    });

    it('retries soon, without an attempt, a message another consumer runs now; it then acknowledges it as a duplicate', async (t) => {
      const { store, close } = await open();
      t.after(close);
      const key = `busy:${randomBytes(4).toString('hex')}`;
      let release!: () => void;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const run = consumerRunner<Msg>(
        store,
        () => gate,
        { ...quiet, timeout: '5s' },
        () => key,
      );
      const running = run(msg('x'), { first: true });
      await new Promise((resolve) => setTimeout(resolve, 50));
      // Act
      const meanwhile = await run(msg('x'), { first: false });
      release();
      const done = await running;
      const later = await run(msg('x'), { first: false });
      // Assess
      assert.equal(meanwhile.result.outcome, 'in-flight');
      assert.equal(meanwhile.verdict.action, 'retry');
      const { delayMs } = meanwhile.verdict as { delayMs: number };
      assert.ok(delayMs >= 250 && delayMs <= 5_500, `${delayMs} ms`);
      assert.deepEqual(done.verdict, { action: 'ack' });
      assert.equal(later.result.outcome, 'duplicate');
      assert.deepEqual(later.verdict, { action: 'ack' });
    });
  });
}

spec('memory', async () => ({ store: memoryStore(), close: async () => {} }));
for (const [label, url, probe] of sharedStores.filter(([name]) => name === 'Redis'))
  if (await reachable(label, url, probe))
    spec(label, async () => {
      const opened = await openStore(url, `oo_consumer_${randomBytes(4).toString('hex')}`);
      return { store: opened.store, close: () => opened.close() };
    });

describe('consumerRunner: what never runs and what never loops', () => {
  it('dead-letters a message whose key cannot be made, without touching the store or the work', async () => {
    let claims = 0;
    const store = memoryStore();
    const counted: Store = {
      ...store,
      claim: (k, o) => {
        claims++;
        return store.claim(k, o);
      },
    };
    let ran = 0;
    const run = consumerRunner<Msg>(
      counted,
      () => ran++,
      {
        ...quiet,
        key: (m) => JSON.parse(m.body).orderId,
      },
      () => 'unused',
    );
    for (const body of ['not json', '{}', '{"orderId":""}']) {
      const { verdict, result } = await run(msg('x', body), { first: true });
      assert.equal(verdict.action, 'dead', body);
      assert.equal(result.outcome, 'invalid', body);
    }
    assert.equal(claims, 0);
    assert.equal(ran, 0);
  });

  it('refuses a key, onResult or work given that is no function, with a ConfigError: no message dead-lettered for it', () => {
    const store = memoryStore();
    const refused = (work: unknown, options: Record<string, unknown>, name: string) =>
      assert.throws(
        () => consumerRunner<Msg>(store, work as () => unknown, { ...quiet, ...options }, (m) => m.id),
        (e: unknown) =>
          e instanceof ConfigError && e.code === 'invalid_option' && new RegExp(name).test(e.message),
        `${name}: ${JSON.stringify(options)}`,
      );
    for (const bad of ['orderId', 5, null, {}]) {
      refused(() => {}, { key: bad }, 'key');
      refused(() => {}, { onResult: bad }, 'onResult');
      refused(bad, {}, 'work');
    }
    // Left out (undefined): the defaults.
    consumerRunner<Msg>(
      store,
      () => {},
      { ...quiet, key: undefined, onResult: undefined },
      (m) => m.id,
    );
  });

  it('retries, never acknowledges, when the store is unavailable: nothing ran and no attempt is spent', async () => {
    const down: Store = { ...memoryStore(), claim: () => Promise.reject(new Error('ECONNREFUSED')) };
    let ran = 0;
    const run = consumerRunner<Msg>(
      down,
      () => ran++,
      { ...quiet, retryDelay: '2s' },
      (m) => m.id,
    );
    const { verdict, result } = await run(msg('x'), { first: false });
    assert.deepEqual(verdict, { action: 'retry', delayMs: 2_000 });
    assert.equal(result.outcome, 'unclaimed');
    assert.equal(ran, 0);
  });

  it('maps every outcome: acknowledged only when redelivering cannot change it', () => {
    const at = new Date(Date.now() + 1_000);
    const cases: [ConsumerResult, string][] = [
      [{ outcome: 'processed', value: 1, attempt: 1 }, 'ack'],
      [{ outcome: 'duplicate' }, 'ack'],
      [{ outcome: 'lease-lost', value: 1, attempt: 2 }, 'ack'],
      [{ outcome: 'conflict', found: 'completed' }, 'ack'],
      [{ outcome: 'failed', error: new Error('x'), attempt: 1 }, 'retry'],
      [{ outcome: 'failed', error: new Error('x'), attempt: 5 }, 'dead'],
      [{ outcome: 'in-flight', attempt: 1, expiresAt: at }, 'retry'],
      [{ outcome: 'unclaimed', error: new Error('down') }, 'retry'],
      [{ outcome: 'exhausted', attempt: 6 }, 'dead'],
      [{ outcome: 'invalid', error: new Error('no id') }, 'dead'],
    ];
    for (const [result, action] of cases)
      assert.equal(verdictOf(result, 5, () => 10).action, action, result.outcome);
  });

  it('backs off 1 s, 2 s, 4 s ... up to 5 min by default, less up to a fifth at random', () => {
    const delay = retryDelayOf(undefined);
    for (const [attempt, full] of [
      [1, 1_000],
      [2, 2_000],
      [3, 4_000],
      [9, 256_000],
      [10, 300_000],
      [1_000, 300_000],
    ] as const) {
      for (let i = 0; i < 20; i++) {
        const ms = delay(attempt);
        assert.ok(ms <= full && ms >= full * 0.8, `attempt ${attempt}: ${ms} ms`);
      }
    }
    assert.equal(retryDelayOf('30s')(3), 30_000);
    assert.throws(
      () =>
        consumerRunner(
          memoryStore(),
          () => {},
          { maxAttempts: 0 },
          () => 'k',
        ),
      /maxAttempts/,
    );
    assert.throws(() =>
      consumerRunner(
        memoryStore(),
        () => {},
        { timeout: 'soon' as never },
        () => 'k',
      ),
    );
  });

  it("settles with the default delay when a retryDelay of one's own throws, and caps a delay at 12 h", async () => {
    const run = consumerRunner<Msg>(
      memoryStore(),
      () => {
        throw new Error('x');
      },
      {
        ...quiet,
        retryDelay: (attempt) => {
          if (attempt === 1) throw new Error('a bug in the delay');
          return 2 ** 40;
        },
      },
      (m) => m.id,
    );
    const first = await run(msg('d1'), { first: true });
    assert.equal(first.verdict.action, 'retry');
    const { delayMs } = first.verdict as { delayMs: number };
    assert.ok(delayMs >= 800 && delayMs <= 1_000, `the default first delay, ${delayMs} ms`);
    const second = await run(msg('d1'), { first: false });
    assert.deepEqual(second.verdict, { action: 'retry', delayMs: 43_200_000 });
  });

  it('beats the heartbeat while the work runs, and stops when it ends', async () => {
    let beats = 0;
    const run = consumerRunner<Msg>(
      memoryStore(),
      () => new Promise((r) => setTimeout(r, 450)),
      quiet,
      (m) => m.id,
    );
    await run(msg('hb'), { first: true, heartbeat: { everyMs: 100, beat: () => beats++ } });
    const atEnd = beats;
    await new Promise((resolve) => setTimeout(resolve, 250));
    assert.ok(atEnd >= 2, `${atEnd} beats while it ran`);
    assert.equal(beats, atEnd, 'no beat after the end');
  });
});
