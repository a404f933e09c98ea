/**
 * A store that is away when the handler ends: the confirm fails for longer than its quick retries,
 * the outcome is reported degraded, and the confirm still lands once the store is back within the
 * lease, so a later duplicate is a duplicate and the work does not run twice.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { Store } from '../../src/core/types.js';
import { once } from '../../src/once.js';
import { memoryStore } from '../../src/stores/memory.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('confirm during a store outage', () => {
  it('reports confirm-failed, then confirms in the background once the store is back within the lease', async () => {
    const inner = memoryStore();
    let down = false;
    const store: Store = {
      ...inner,
      confirm: (lease, o) => (down ? Promise.reject(new Error('ECONNREFUSED')) : inner.confirm(lease, o)),
    };
    let runs = 0;
    const work = () => {
      runs++;
      down = true; // the store goes away while the work runs
    };

    const first = await once(store, 'order:1', work, { timeout: '1s', lease: '3s' });
    assert.equal(first.outcome === 'processed' && first.degraded, 'confirm-failed');
    assert.equal((await inner.inspect('order:1'))?.state, 'processing');

    await sleep(1_000);
    down = false; // back after about 1.5 s, well within the 3 s lease
    await sleep(1_500);
    assert.equal((await inner.inspect('order:1'))?.state, 'completed');

    await sleep(1_000); // past the original lease: an unconfirmed key would be taken over now
    const again = await once(store, 'order:1', work, { timeout: '1s', lease: '3s' });
    assert.equal(again.outcome, 'duplicate');
    assert.equal(runs, 1);
  });

  it('gives up after the lease: a store that never comes back changes nothing', async () => {
    const inner = memoryStore();
    let confirms = 0;
    const store: Store = {
      ...inner,
      confirm: () => {
        confirms++;
        return Promise.reject(new Error('ECONNREFUSED'));
      },
    };
    const result = await once(store, 'order:2', () => 1, { timeout: '150ms', lease: '2s' });
    assert.equal(result.outcome === 'processed' && result.degraded, 'confirm-failed');
    await sleep(2_500);
    const seen = confirms;
    await sleep(1_500);
    assert.equal(confirms, seen, 'no confirm attempts after the lease has run out');
    // The quick retries before the answer (after 25, 100 and 400 ms: four tries however slow the
    // host), then in the background every 100 ms at most (a twentieth of the lease) until the
    // lease's end less its margin (200 ms): a bounded number, none after.
    assert.ok(seen >= 4 && seen <= 22, `a bounded number of attempts, got ${seen}`);
  });
});
