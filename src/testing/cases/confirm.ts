/** Extend, confirm and retention: the lease kept alive, a confirm that still completes, records that expire. */
import { strict as assert } from 'node:assert';
import { acquired, type ConformanceCase, claimLong, fp, LONG } from './shared.js';

export const confirmCases: readonly ConformanceCase[] = [
  {
    name: 'extend by the owner keeps the lease alive past its first expiry',
    async run(store, ctx) {
      const key = ctx.key();
      const lease = acquired(await store.claim(key, { leaseMs: ctx.shortMs }));
      assert.equal(await store.extend(lease, { leaseMs: LONG }), true);
      await ctx.waitOut();
      const other = await store.claim(key, { leaseMs: LONG });
      assert.equal(other.status, 'in-flight');
      const view = await store.inspect(key);
      assert.ok(view && view.expiresAt.getTime() > Date.now() + LONG / 2, 'extend moved the expiry');
      assert.equal(await store.confirm(lease, { retentionMs: LONG }), true);
    },
  },
  {
    name: 'confirm after the record vanished writes it as completed',
    async run(store, ctx) {
      const key = ctx.key();
      // A short lease kept only briefly: the store may forget it (SQL stores keep the row until a
      // purge, as a lease that ran out and is still ours). Either way the confirm completes the key.
      const lease = acquired(
        await store.claim(key, { leaseMs: ctx.shortMs, fingerprint: fp('d'), retentionMs: ctx.shortMs }),
      );
      await ctx.waitOut();
      const gone = await store.inspect(key);
      assert.ok(
        gone === undefined || (gone.state === 'processing' && gone.attempt === 1),
        `vanished, or run out and still ours, got ${JSON.stringify(gone)}`,
      );
      assert.equal(await store.confirm(lease, { retentionMs: LONG }), true);
      const view = await store.inspect(key);
      assert.equal(view?.state, 'completed');
      assert.equal(view?.fingerprint, fp('d'), 'the fingerprint comes from the lease handle');
      assert.deepEqual(await store.claim(key, { leaseMs: LONG, fingerprint: fp('d') }), {
        status: 'completed',
        sameFingerprint: true,
      });
    },
  },
  {
    name: 'confirm after the lease ran out with nobody taking over completes the key',
    async run(store, ctx) {
      const key = ctx.key();
      const lease = acquired(await store.claim(key, { leaseMs: ctx.shortMs }));
      await ctx.waitOut();
      assert.equal(await store.confirm(lease, { retentionMs: LONG }), true);
      assert.equal((await store.claim(key, { leaseMs: LONG })).status, 'completed');
    },
  },
  {
    name: 'a repeated confirm by the same owner is still true',
    async run(store, ctx) {
      const key = ctx.key();
      const lease = await claimLong(store, key);
      assert.equal(await store.confirm(lease, { retentionMs: LONG }), true);
      assert.equal(await store.confirm(lease, { retentionMs: LONG }), true, 'confirm must be safe to retry');
      assert.equal(await store.release(lease), false, 'a completed key cannot be released');
      assert.equal((await store.inspect(key))?.state, 'completed');
    },
  },
  {
    name: 'leases and retention are honoured',
    async run(store, ctx) {
      const key = ctx.key();
      const lease = acquired(await store.claim(key, { leaseMs: LONG }));
      assert.equal(await store.confirm(lease, { retentionMs: ctx.shortMs }), true);
      assert.equal((await store.claim(key, { leaseMs: LONG })).status, 'completed', 'within retention');
      await ctx.waitOut();
      assert.equal(await store.inspect(key), undefined, 'expired completed records read as absent');
      const again = acquired(await store.claim(key, { leaseMs: LONG }));
      assert.equal(again.attempt, 1, 'a key that expired starts over');
    },
  },
];
