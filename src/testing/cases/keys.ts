/** Awkward keys, inspect, and two store instances over the same data. */
import { strict as assert } from 'node:assert';
import { type ConformanceCase, claimLong, fp, LONG } from './shared.js';

export const keyCases: readonly ConformanceCase[] = [
  {
    name: 'awkward keys (unicode, 1 KiB, colons and braces) go through the whole life',
    async run(store, ctx) {
      const base = ctx.key();
      const keys = [
        `${base}:ключ:🔑:événement:事件`,
        `${base}:${'x'.repeat(1024 - base.length - 1)}`,
        `${base}:{tag}:a:b::c:{{}}:}{`,
        `${base}:'"\\%_*?[]$\`;--`,
      ];
      for (const key of keys) {
        const lease = await claimLong(store, key, fp('e'));
        assert.equal(lease.key, key);
        assert.equal((await store.claim(key, { leaseMs: LONG })).status, 'in-flight');
        assert.equal(await store.extend(lease, { leaseMs: LONG }), true);
        assert.equal(await store.confirm(lease, { retentionMs: LONG }), true);
        assert.equal((await store.claim(key, { leaseMs: LONG, fingerprint: fp('e') })).status, 'completed');
        const view = await store.inspect(key);
        assert.equal(view?.key, key);
        assert.equal(view?.state, 'completed');
        assert.deepEqual(await store.record(key, { retentionMs: LONG }), { duplicate: true });
        assert.equal(await store.advance(key, 1), true);
      }
      assert.equal(keys[1]!.length, 1024);
    },
  },
  {
    name: 'inspect shows absent, processing and completed records',
    async run(store, ctx) {
      const key = ctx.key();
      assert.equal(await store.inspect(key), undefined);
      const lease = await claimLong(store, key, fp('f'));
      const processing = await store.inspect(key);
      assert.equal(processing?.key, key);
      assert.equal(processing?.state, 'processing');
      assert.equal(processing?.attempt, 1);
      assert.equal(processing?.fingerprint, fp('f'));
      assert.ok(processing && processing.expiresAt.getTime() > Date.now());
      await store.confirm(lease, { retentionMs: 3 * LONG });
      const completed = await store.inspect(key);
      assert.equal(completed?.state, 'completed');
      assert.ok(
        completed && completed.expiresAt.getTime() > Date.now() + 2 * LONG,
        'retention sets the expiry',
      );
    },
  },
  {
    name: 'two store instances over the same backing data see each other',
    async run(store, ctx) {
      const key = ctx.key();
      const second = await ctx.store();
      const lease = await claimLong(store, key);
      assert.equal((await second.claim(key, { leaseMs: LONG })).status, 'in-flight');
      assert.equal(await second.confirm({ ...lease, token: '0'.repeat(32) }, { retentionMs: LONG }), false);
      assert.equal(
        await second.confirm(lease, { retentionMs: LONG }),
        true,
        'the token, not the instance, is the owner',
      );
      assert.equal((await store.claim(key, { leaseMs: LONG })).status, 'completed');
    },
  },
];
