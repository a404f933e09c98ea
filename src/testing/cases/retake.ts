/** Taking over a released record or a lease that ran out: the same fingerprint only, for as long as the retention, one winner. */
import { strict as assert } from 'node:assert';
import { acquired, type ConformanceCase, claimLong, fp, LONG } from './shared.js';

export const retakeCases: readonly ConformanceCase[] = [
  {
    name: 'a released record refuses another fingerprint (in-flight, not the same) and takes the same one',
    async run(store, ctx) {
      const key = ctx.key();
      const lease = await claimLong(store, key, fp('a'));
      assert.equal(await store.release(lease), true);
      const other = await store.claim(key, { leaseMs: LONG, fingerprint: fp('b') });
      assert.equal(
        other.status,
        'in-flight',
        `another body must not take it over, got ${JSON.stringify(other)}`,
      );
      if (other.status === 'in-flight') {
        assert.equal(other.attempt, 1);
        assert.equal(other.sameFingerprint, false);
        assert.ok(other.expiresAt instanceof Date);
      }
      assert.deepEqual(await store.record(key, { retentionMs: LONG, fingerprint: fp('b') }), {
        duplicate: true,
      });
      const view = await store.inspect(key);
      assert.equal(view?.state, 'released', 'the refused claims changed nothing');
      assert.equal(view?.fingerprint, fp('a'));
      const same = acquired(await store.claim(key, { leaseMs: LONG, fingerprint: fp('a') }));
      assert.equal(same.attempt, 2);

      // Either side without a fingerprint is no mismatch.
      const none = ctx.key('none');
      assert.equal(await store.release(await claimLong(store, none, fp('a'))), true);
      const bare = acquired(await store.claim(none, { leaseMs: LONG }));
      assert.equal(bare.attempt, 2);
      assert.equal(bare.fingerprint, undefined);
      assert.equal(await store.release(bare), true);
      assert.equal(acquired(await store.claim(none, { leaseMs: LONG, fingerprint: fp('c') })).attempt, 3);
    },
  },
  {
    name: 'a lease that ran out refuses another fingerprint (in-flight, not the same) and takes the same one',
    async run(store, ctx) {
      const key = ctx.key();
      acquired(await store.claim(key, { leaseMs: ctx.shortMs, fingerprint: fp('a'), retentionMs: LONG }));
      await ctx.waitOut();
      const other = await store.claim(key, { leaseMs: LONG, fingerprint: fp('b') });
      assert.equal(
        other.status,
        'in-flight',
        `another body must not take it over, got ${JSON.stringify(other)}`,
      );
      if (other.status === 'in-flight') {
        assert.equal(other.attempt, 1);
        assert.equal(other.sameFingerprint, false);
      }
      assert.deepEqual(await store.record(key, { retentionMs: LONG, fingerprint: fp('b') }), {
        duplicate: true,
      });
      assert.equal((await store.inspect(key))?.fingerprint, fp('a'));
      const same = acquired(await store.claim(key, { leaseMs: LONG, fingerprint: fp('a') }));
      assert.equal(same.attempt, 2);
    },
  },
  {
    name: "a lease that ran out is taken over with attempt + 1 long after its end when the claim's retentionMs covers it",
    async run(store, ctx) {
      const key = ctx.key();
      acquired(await store.claim(key, { leaseMs: ctx.shortMs, retentionMs: LONG }));
      await ctx.waitOut();
      await ctx.waitOut();
      const view = await store.inspect(key);
      assert.equal(view?.state, 'processing', 'the run-out record is remembered');
      assert.equal(view?.attempt, 1);
      const next = acquired(await store.claim(key, { leaseMs: LONG, retentionMs: LONG }));
      assert.equal(next.attempt, 2, 'the takeover raises the attempt');
    },
  },
  {
    name: "a released record is remembered for the claim's retentionMs: a later claim still gets attempt + 1",
    async run(store, ctx) {
      const key = ctx.key();
      const lease = acquired(
        await store.claim(key, { leaseMs: ctx.shortMs, fingerprint: fp('a'), retentionMs: LONG }),
      );
      assert.equal(await store.release(lease), true);
      await ctx.waitOut();
      await ctx.waitOut();
      assert.equal((await store.inspect(key))?.state, 'released');
      const next = acquired(await store.claim(key, { leaseMs: LONG, fingerprint: fp('a') }));
      assert.equal(next.attempt, 2);
    },
  },
  {
    name: '100 concurrent claims of a released key give exactly one acquired, at attempt + 1',
    async run(store, ctx) {
      const key = ctx.key();
      const first = await claimLong(store, key, fp('c'));
      assert.equal(await store.release(first), true);
      const claims = await Promise.all(
        Array.from({ length: 100 }, () => store.claim(key, { leaseMs: LONG, fingerprint: fp('c') })),
      );
      const winners = claims.filter((c) => c.status === 'acquired');
      assert.equal(winners.length, 1, 'exactly one claim may acquire');
      assert.equal(acquired(winners[0]!).attempt, 2);
      for (const c of claims) {
        if (c.status === 'acquired') continue;
        assert.equal(c.status, 'in-flight');
        if (c.status === 'in-flight') {
          assert.equal(c.attempt, 2, 'the losers see the winner');
          assert.equal(c.sameFingerprint, true);
        }
      }
    },
  },
  {
    name: 'record() takes over a released record and completes it with attempt + 1',
    async run(store, ctx) {
      const key = ctx.key();
      const lease = await claimLong(store, key, fp('r'));
      assert.equal(await store.release(lease), true);
      assert.deepEqual(await store.record(key, { retentionMs: LONG, fingerprint: fp('r') }), {
        duplicate: false,
      });
      const view = await store.inspect(key);
      assert.equal(view?.state, 'completed');
      assert.equal(view?.attempt, 2);
      assert.equal(view?.fingerprint, fp('r'));
      assert.deepEqual(await store.record(key, { retentionMs: LONG }), { duplicate: true });
      assert.equal(
        await store.confirm(lease, { retentionMs: LONG }),
        false,
        'the released lease owns nothing',
      );
    },
  },
];
