/** record() and advance(): dedup without a lease, and the ordering guard. */
import { strict as assert } from 'node:assert';
import { type ConformanceCase, claimLong, fp, LONG } from './shared.js';

export const recordCases: readonly ConformanceCase[] = [
  {
    name: 'record() dedups exactly once under 100 concurrent calls',
    async run(store, ctx) {
      const key = ctx.key();
      const results = await Promise.all(
        Array.from({ length: 100 }, () => store.record(key, { retentionMs: LONG, fingerprint: fp('r') })),
      );
      assert.equal(results.filter((r) => !r.duplicate).length, 1);
      assert.deepEqual(await store.record(key, { retentionMs: LONG }), { duplicate: true });
      const view = await store.inspect(key);
      assert.equal(view?.state, 'completed');
      assert.equal(view?.fingerprint, fp('r'));
    },
  },
  {
    name: 'record() sees a live lease as a duplicate and honours retention',
    async run(store, ctx) {
      const key = ctx.key();
      await claimLong(store, key);
      assert.deepEqual(await store.record(key, { retentionMs: LONG }), { duplicate: true });
      const other = ctx.key('short');
      assert.deepEqual(await store.record(other, { retentionMs: ctx.shortMs }), { duplicate: false });
      assert.equal((await store.claim(other, { leaseMs: LONG })).status, 'completed');
      await ctx.waitOut();
      assert.deepEqual(await store.record(other, { retentionMs: LONG }), { duplicate: false });
    },
  },
  {
    name: 'advance() accepts only newer versions',
    async run(store, ctx) {
      const entity = ctx.key();
      assert.equal(await store.advance(entity, 5), true);
      assert.equal(await store.advance(entity, 5), false, 'same version');
      assert.equal(await store.advance(entity, 4), false, 'older version');
      assert.equal(await store.advance(entity, 6), true);
      assert.equal(await store.advance(entity, 1_700_000_000_123), true, 'timestamps in ms fit');
      assert.equal(await store.advance(entity, 1_700_000_000_122), false);
      assert.equal(
        await store.claim(entity, { leaseMs: LONG }).then((c) => c.status),
        'acquired',
        'versions do not block claims',
      );
    },
  },
  {
    name: 'advance() accepts only newer versions under concurrency',
    async run(store, ctx) {
      const same = ctx.key('same');
      const results = await Promise.all(Array.from({ length: 50 }, () => store.advance(same, 7)));
      assert.equal(results.filter(Boolean).length, 1, 'one of 50 equal versions wins');

      const entity = ctx.key('mixed');
      const versions = Array.from({ length: 60 }, (_, i) => i + 1).sort(() => Math.random() - 0.5);
      const accepted = await Promise.all(versions.map((v) => store.advance(entity, v)));
      assert.ok(accepted.some(Boolean));
      assert.equal(accepted[versions.indexOf(60)], true, 'the newest version is always accepted');
      for (let v = 1; v <= 60; v++)
        assert.equal(await store.advance(entity, v), false, `v${v} is not newer than 60`);
      assert.equal(await store.advance(entity, 61), true);
    },
  },
];
