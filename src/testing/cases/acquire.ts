/** Acquiring a key: the first claim, its token, one winner among concurrent claims, a live lease reported in-flight. */
import { strict as assert } from 'node:assert';
import { acquired, type ConformanceCase, claimLong, fp, LONG } from './shared.js';

export const acquireCases: readonly ConformanceCase[] = [
  {
    name: 'a first claim acquires attempt 1 with a frozen lease handle',
    async run(store, ctx) {
      const key = ctx.key();
      const before = Date.now();
      const lease = acquired(await store.claim(key, { leaseMs: LONG, fingerprint: fp('a') }));
      assert.equal(lease.key, key);
      assert.equal(lease.attempt, 1);
      assert.equal(lease.fingerprint, fp('a'));
      assert.match(lease.token, /^[0-9a-f]{32,}$/, 'token must be at least 128 random bits, hex');
      assert.ok(lease.expiresAt instanceof Date);
      // Store clocks may differ from ours by a little; the lease must be about leaseMs long.
      assert.ok(lease.expiresAt.getTime() > before + LONG - 5_000, 'expiresAt must be about now + leaseMs');
      assert.ok(Object.isFrozen(lease), 'lease handles are frozen');
    },
  },
  {
    name: 'owner tokens are random per claim',
    async run(store, ctx) {
      const a = await claimLong(store, ctx.key('a'));
      const b = await claimLong(store, ctx.key('b'));
      assert.notEqual(a.token, b.token);
    },
  },
  {
    name: '100 concurrent claims of one key give exactly one acquired',
    async run(store, ctx) {
      const key = ctx.key();
      const claims = await Promise.all(
        Array.from({ length: 100 }, () => store.claim(key, { leaseMs: LONG, fingerprint: fp('c') })),
      );
      const winners = claims.filter((c) => c.status === 'acquired');
      assert.equal(winners.length, 1, 'exactly one claim may acquire');
      for (const c of claims) {
        if (c.status === 'acquired') continue;
        assert.equal(c.status, 'in-flight');
        if (c.status === 'in-flight') {
          assert.equal(c.attempt, 1);
          assert.equal(c.sameFingerprint, true);
        }
      }
    },
  },
  {
    name: 'a live lease is reported in-flight with attempt, expiry and fingerprint match',
    async run(store, ctx) {
      const key = ctx.key();
      const lease = await claimLong(store, key, fp('a'));
      const same = await store.claim(key, { leaseMs: LONG, fingerprint: fp('a') });
      assert.equal(same.status, 'in-flight');
      if (same.status !== 'in-flight') return;
      assert.equal(same.attempt, 1);
      assert.equal(same.sameFingerprint, true);
      assert.ok(Math.abs(same.expiresAt.getTime() - lease.expiresAt.getTime()) < 1_000);
      const other = await store.claim(key, { leaseMs: LONG, fingerprint: fp('b') });
      assert.equal(other.status, 'in-flight');
      assert.equal(
        other.status === 'in-flight' && other.sameFingerprint,
        false,
        'fingerprint mismatch on in-flight',
      );
      const none = await store.claim(key, { leaseMs: LONG });
      assert.equal(
        none.status === 'in-flight' && none.sameFingerprint,
        true,
        'no fingerprint offered is not a mismatch',
      );
    },
  },
];
