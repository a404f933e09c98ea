import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { Telemetry } from './core/telemetry.js';
import type { Store } from './core/types.js';
import { ConfigError, HandlerTimeoutError, LeaseLostError } from './errors.js';
import { once } from './once.js';
import { memoryStore } from './stores/memory.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('once()', () => {
  it('runs the work once and reports later calls as duplicates', async () => {
    const store = memoryStore();
    let runs = 0;
    const first = await once(store, 'k', async ({ attempt }) => {
      runs++;
      return `done ${attempt}`;
    });
    assert.deepEqual(first, { outcome: 'processed', attempt: 1, value: 'done 1', degraded: undefined });
    assert.deepEqual(await once(store, 'k', () => runs++), { outcome: 'duplicate' });
    assert.equal(runs, 1);
  });

  it('reports in-flight while another run holds the key', async () => {
    const store = memoryStore();
    let release!: () => void;
    const running = once(store, 'k', () => new Promise<void>((resolve) => (release = resolve)));
    await sleep(5);
    const second = await once(store, 'k', () => assert.fail('must not run'));
    assert.equal(second.outcome, 'in-flight');
    assert.equal(second.outcome === 'in-flight' && second.attempt, 1);
    release();
    assert.equal((await running).outcome, 'processed');
  });

  it('releases the claim when the work throws, so the redelivery runs', async () => {
    const store = memoryStore();
    const boom = new Error('boom');
    const failed = await once(store, 'k', () => {
      throw boom;
    });
    assert.deepEqual(failed, { outcome: 'failed', attempt: 1, error: boom, degraded: undefined });
    const released = await store.inspect('k');
    assert.equal(released?.state, 'released', 'released, takeable at once');
    assert.equal(released?.attempt, 1, 'the attempt is kept');
    const retry = await once(store, 'k', ({ attempt }) => attempt);
    assert.equal(retry.outcome, 'processed');
    assert.equal(retry.outcome === 'processed' && retry.value, 2, 'the redelivery runs at attempt 2');
  });

  it('aborts the work at its deadline and releases the claim', async () => {
    const store = memoryStore();
    let aborted: unknown;
    const result = await once(
      store,
      'k',
      ({ signal }) =>
        new Promise((_, reject) => {
          signal.addEventListener('abort', () => {
            aborted = signal.reason;
            reject(signal.reason);
          });
        }),
      { timeout: '50ms' },
    );
    assert.equal(result.outcome, 'failed');
    assert.ok(result.outcome === 'failed' && result.error instanceof HandlerTimeoutError);
    assert.ok(aborted instanceof HandlerTimeoutError);
    assert.equal((await store.inspect('k'))?.state, 'released');
  });

  it('gives up on work that ignores its signal at the deadline', async () => {
    const store = memoryStore();
    const started = Date.now();
    const result = await once(store, 'k', () => new Promise(() => {}), { timeout: '60ms' });
    assert.equal(result.outcome, 'failed');
    assert.ok(Date.now() - started < 1_000);
  });

  it('counts work that ends past its deadline as failed, synchronous or not, even before the deadline could fire', async () => {
    // Synchronous work no timer can stop: 120 ms of it against a 60 ms deadline.
    const store = memoryStore();
    const busy = (ms: number) => {
      const from = performance.now();
      while (performance.now() - from < ms);
      return 'done';
    };
    // (Telemetry's handler phase ends with the timeout too.)
    const ended: [string, unknown][] = [];
    const telemetry: Telemetry = {
      start: () => ({
        phase: (name) => ({ end: (error) => ended.push([name, error]) }),
        wrap: (fn) => fn(),
        end: () => {},
      }),
      outcome: () => {},
    };
    const sync = await once(store, 'sync', () => busy(120), { timeout: '60ms', telemetry });
    assert.ok(sync.outcome === 'failed' && sync.error instanceof HandlerTimeoutError);
    assert.equal((await store.inspect('sync'))?.state, 'released');
    assert.ok(ended.find(([name]) => name === 'handler')?.[1] instanceof HandlerTimeoutError);
    // Async work that blocks the loop past its deadline and then resolves: its end comes before the
    // deadline's tick could.
    const late = await once(store, 'late', async () => busy(120), { timeout: '60ms' });
    assert.ok(late.outcome === 'failed' && late.error instanceof HandlerTimeoutError);
    assert.equal((await store.inspect('late'))?.state, 'released');
    // Within its deadline: processed, as ever.
    assert.equal((await once(store, 'quick', () => busy(5), { timeout: '60ms' })).outcome, 'processed');
  });

  it('extends the lease while the work runs past its first expiry', async () => {
    const store = memoryStore();
    const running = once(store, 'k', () => sleep(500), { lease: '150ms', timeout: '5s' });
    await sleep(350);
    const meanwhile = await once(store, 'k', () => assert.fail('must not run'), { lease: '150ms' });
    assert.equal(meanwhile.outcome, 'in-flight', 'the heartbeat kept the lease alive');
    assert.equal((await running).outcome, 'processed');
  });

  it('reports lease-lost when another owner took over before confirm', async () => {
    let now = 0;
    const store = memoryStore({ now: () => now });
    const result = await once(
      store,
      'k',
      async () => {
        now += 10 * 60_000; // our lease runs out while we work
        const takeover = await once(store, 'k', ({ attempt }) => attempt, { lease: '1m' });
        assert.deepEqual(takeover, { outcome: 'processed', attempt: 2, value: 2, degraded: undefined });
        return 'ours';
      },
      { lease: '1m' },
    );
    assert.deepEqual(result, { outcome: 'lease-lost', attempt: 1, value: 'ours' });
    assert.equal((await store.inspect('k'))?.attempt, 2, 'the stale owner changed nothing');
  });

  it('aborts the signal when a heartbeat finds the lease lost', async () => {
    const inner = memoryStore();
    const store: Store = { ...inner, extend: async () => false };
    let reason: unknown;
    await once(
      store,
      'k',
      ({ signal }) =>
        new Promise<void>((resolve) => {
          signal.addEventListener('abort', () => {
            reason = signal.reason;
            resolve();
          });
        }),
      { lease: '60ms', timeout: '2s' },
    );
    assert.ok(reason instanceof LeaseLostError);
  });

  it('reports a conflict when the fingerprint differs', async () => {
    const store = memoryStore();
    await once(store, 'k', () => 1, { fingerprint: 'a'.repeat(64) });
    assert.deepEqual(await once(store, 'k', () => 1, { fingerprint: 'b'.repeat(64) }), {
      outcome: 'conflict',
      found: 'completed',
    });
  });

  it('throws a store error on claim, since nothing ran', async () => {
    const store: Store = { ...memoryStore(), claim: async () => Promise.reject(new Error('ECONNREFUSED')) };
    await assert.rejects(
      once(store, 'k', () => assert.fail('must not run')),
      /ECONNREFUSED/,
    );
  });

  it('retries a confirm that threw, and reports it degraded when it keeps failing', async () => {
    const inner = memoryStore();
    let calls = 0;
    const flaky: Store = {
      ...inner,
      confirm: async (lease, o) =>
        ++calls < 3 ? Promise.reject(new Error('timeout')) : inner.confirm(lease, o),
    };
    assert.deepEqual(await once(flaky, 'a', () => 1), {
      outcome: 'processed',
      attempt: 1,
      value: 1,
      degraded: undefined,
    });
    assert.equal(calls, 3);
    const down: Store = { ...inner, confirm: async () => Promise.reject(new Error('down')) };
    const result = await once(down, 'b', () => 1);
    assert.equal(result.outcome === 'processed' && result.degraded, 'confirm-failed');
  });

  it('validates its key and durations', async () => {
    await assert.rejects(
      once(memoryStore(), '', () => 1),
      ConfigError,
    );
    await assert.rejects(
      once(memoryStore(), 'k', () => 1, { timeout: '1 h' as never }),
      /timeout/,
    );
    await assert.rejects(
      once(memoryStore(), 'k', () => 1, { lease: '0ms' }),
      /lease must be longer/,
    );
  });
});
