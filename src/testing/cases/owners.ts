/** Who owns a key: the owner's confirm, a stale or forged owner's calls, takeover after expiry. */
import { strict as assert } from 'node:assert';
import { acquired, type ConformanceCase, claimLong, fp, LONG, takenOver } from './shared.js';

export const ownerCases: readonly ConformanceCase[] = [
  {
    name: 'confirm by the owner completes the key; a mismatched fingerprint is reported on completed',
    async run(store, ctx) {
      const key = ctx.key();
      const lease = await claimLong(store, key, fp('a'));
      assert.equal(await store.confirm(lease, { retentionMs: LONG }), true);
      assert.deepEqual(await store.claim(key, { leaseMs: LONG, fingerprint: fp('a') }), {
        status: 'completed',
        sameFingerprint: true,
      });
      assert.deepEqual(await store.claim(key, { leaseMs: LONG, fingerprint: fp('b') }), {
        status: 'completed',
        sameFingerprint: false,
      });
      assert.deepEqual(await store.claim(key, { leaseMs: LONG }), {
        status: 'completed',
        sameFingerprint: true,
      });
      const view = await store.inspect(key);
      assert.equal(view?.state, 'completed');
      assert.equal(view?.attempt, 1);
      assert.equal(view?.fingerprint, fp('a'));
    },
  },
  {
    // Its own case: above, the stale extend comes first, and a store may treat a renewed lease
    // apart (the Redis store's native compare-and-set does).
    name: "a stale owner's confirm, its first call after the takeover, returns false and completes nothing",
    async run(store, ctx) {
      const { key, stale, current } = await takenOver(store, ctx);
      assert.equal(await store.confirm(stale, { retentionMs: LONG }), false, 'stale confirm');
      const after = await store.inspect(key);
      assert.equal(after?.state, 'processing');
      assert.equal(after?.attempt, 2);
      assert.equal(await store.confirm(current, { retentionMs: LONG }), true);
      assert.equal((await store.inspect(key))?.state, 'completed');
    },
  },
  {
    name: "a stale owner's confirm, release and extend return false and change nothing",
    async run(store, ctx) {
      const { key, stale, current } = await takenOver(store, ctx);
      const before = await store.inspect(key);

      assert.equal(await store.extend(stale, { leaseMs: 10 * LONG }), false, 'stale extend');
      assert.equal(await store.confirm(stale, { retentionMs: LONG }), false, 'stale confirm');
      assert.equal(await store.release(stale), false, 'stale release');

      const after = await store.inspect(key);
      assert.equal(after?.state, 'processing');
      assert.equal(after?.attempt, 2);
      assert.equal(
        after?.expiresAt.getTime(),
        before?.expiresAt.getTime(),
        'stale writes must not move the expiry',
      );
      const again = await store.claim(key, { leaseMs: LONG });
      assert.equal(again.status, 'in-flight', 'the current owner still holds the key');
      assert.equal(await store.confirm(current, { retentionMs: LONG }), true);
      const completed = await store.inspect(key);
      assert.equal(await store.release(stale), false, 'stale release after completion');
      assert.equal(
        await store.confirm(stale, { retentionMs: 10 * LONG }),
        false,
        'stale confirm after completion',
      );
      assert.equal(await store.extend(stale, { leaseMs: 10 * LONG }), false, 'stale extend after completion');
      const last = await store.inspect(key);
      assert.equal(last?.state, 'completed');
      assert.equal(last?.attempt, 2, "the completed record is the new owner's");
      assert.equal(last?.expiresAt.getTime(), completed?.expiresAt.getTime(), 'its retention did not move');
    },
  },
  {
    name: 'a forged token cannot confirm, release or extend a live lease',
    async run(store, ctx) {
      const key = ctx.key();
      const lease = await claimLong(store, key);
      const forged = { ...lease, token: 'f'.repeat(lease.token.length) };
      assert.equal(await store.confirm(forged, { retentionMs: LONG }), false);
      assert.equal(await store.release(forged), false);
      assert.equal(await store.extend(forged, { leaseMs: LONG }), false);
      assert.equal((await store.inspect(key))?.state, 'processing');
    },
  },
  {
    name: 'takeover after expiry gives attempt + 1, every time',
    async run(store, ctx) {
      const key = ctx.key();
      // A long lease first, so the in-flight check holds however slow the host is; the owner then
      // shortens it (extend sets the end to now + lease) and it runs out on the store's clock.
      const first = acquired(await store.claim(key, { leaseMs: LONG, retentionMs: LONG }));
      assert.equal(first.attempt, 1);
      const live = await store.claim(key, { leaseMs: ctx.shortMs, retentionMs: LONG });
      assert.equal(live.status, 'in-flight', 'before expiry the key is in-flight');
      assert.equal(await store.extend(first, { leaseMs: ctx.shortMs }), true);
      await ctx.waitOut();
      const second = acquired(await store.claim(key, { leaseMs: ctx.shortMs, retentionMs: LONG }));
      assert.equal(second.attempt, 2);
      assert.notEqual(second.token, first.token);
      await ctx.waitOut();
      const third = acquired(await store.claim(key, { leaseMs: LONG }));
      assert.equal(third.attempt, 3);
      assert.equal((await store.inspect(key))?.attempt, 3);
    },
  },
  {
    name: 'concurrent claims on an expired lease give exactly one takeover',
    async run(store, ctx) {
      const key = ctx.key();
      acquired(await store.claim(key, { leaseMs: ctx.shortMs, retentionMs: LONG }));
      await ctx.waitOut();
      const claims = await Promise.all(Array.from({ length: 50 }, () => store.claim(key, { leaseMs: LONG })));
      const winners = claims.filter((c) => c.status === 'acquired');
      assert.equal(winners.length, 1);
      assert.equal(acquired(winners[0]!).attempt, 2);
    },
  },
];
