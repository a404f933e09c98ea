/** Release: the next claim gets in at attempt + 1, and the released lease owns nothing. */
import { strict as assert } from 'node:assert';
import { acquired, type ConformanceCase, claimLong, fp, LONG } from './shared.js';

export const releaseCases: readonly ConformanceCase[] = [
  {
    name: 'release by the owner lets the next claim in',
    async run(store, ctx) {
      const key = ctx.key();
      const lease = await claimLong(store, key);
      assert.equal(await store.release(lease), true);
      assert.equal((await store.inspect(key))?.state, 'released', 'the record is kept, released');
      const next = acquired(await store.claim(key, { leaseMs: LONG }));
      assert.notEqual(next.token, lease.token);
      assert.equal(next.attempt, 2, 'the next claim raises the attempt');
      assert.equal(await store.release(lease), false, 'the released lease is no longer the owner');
      assert.equal((await store.inspect(key))?.state, 'processing');
    },
  },
  {
    name: 'a released record is takeable at once: the next claim acquires it, not in-flight',
    async run(store, ctx) {
      const key = ctx.key();
      // A lease much longer than the test: only the release can let the next claim in.
      const lease = acquired(await store.claim(key, { leaseMs: 10 * LONG, fingerprint: fp('a') }));
      assert.equal(await store.release(lease), true);
      const next = await store.claim(key, { leaseMs: LONG, fingerprint: fp('a') });
      assert.equal(next.status, 'acquired', `expected acquired, got ${JSON.stringify(next)}`);
    },
  },
  {
    name: 'attempts never go back across release and claim: 1, 2, 3',
    async run(store, ctx) {
      const key = ctx.key();
      const attempts: number[] = [];
      for (let i = 0; i < 3; i++) {
        const lease = acquired(
          await store.claim(key, { leaseMs: LONG, fingerprint: fp('a'), retentionMs: LONG }),
        );
        attempts.push(lease.attempt);
        assert.equal(await store.release(lease), true);
        assert.equal((await store.inspect(key))?.attempt, lease.attempt, 'release keeps the attempt');
      }
      assert.deepEqual(attempts, [1, 2, 3]);
      const last = acquired(await store.claim(key, { leaseMs: LONG, fingerprint: fp('a') }));
      assert.equal(last.attempt, 4);
      assert.equal(await store.confirm(last, { retentionMs: LONG }), true);
      const view = await store.inspect(key);
      assert.equal(view?.state, 'completed');
      assert.equal(view?.attempt, 4);
    },
  },
  {
    name: 'after release the old token cannot confirm, extend or release, and the record stays released',
    async run(store, ctx) {
      const key = ctx.key();
      const lease = await claimLong(store, key, fp('a'));
      assert.equal(await store.release(lease), true);
      const before = await store.inspect(key);
      assert.equal(await store.confirm(lease, { retentionMs: LONG }), false, 'confirm after release');
      assert.equal(await store.extend(lease, { leaseMs: LONG }), false, 'extend after release');
      assert.equal(await store.release(lease), false, 'release after release');
      const after = await store.inspect(key);
      assert.equal(after?.state, 'released', 'confirm must not complete a released record');
      assert.equal(after?.attempt, 1);
      assert.equal(after?.fingerprint, fp('a'));
      assert.equal(after?.expiresAt.getTime(), before?.expiresAt.getTime(), 'nothing moved');
      const next = acquired(await store.claim(key, { leaseMs: LONG, fingerprint: fp('a') }));
      assert.equal(next.attempt, 2, 'a retry still runs the work');
    },
  },
  {
    name: 'inspect shows a released record with its attempt and fingerprint',
    async run(store, ctx) {
      const key = ctx.key();
      const first = await claimLong(store, key, fp('b'));
      assert.equal(await store.release(first), true);
      const second = await claimLong(store, key, fp('b'));
      const before = Date.now();
      assert.equal(await store.release(second), true);
      const view = await store.inspect(key);
      assert.equal(view?.key, key);
      assert.equal(view?.state, 'released');
      assert.equal(view?.attempt, 2);
      assert.equal(view?.fingerprint, fp('b'));
      // The lease's end is the release, on the store's clock (which may differ from ours a little).
      assert.ok(
        view && Math.abs(view.expiresAt.getTime() - before) < 5_000,
        `a released record's lease ended at the release, got ${view?.expiresAt.toISOString()}`,
      );
    },
  },
];
