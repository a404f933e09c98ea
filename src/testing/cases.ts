import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import type { Claim, Lease, Store } from '../core/types.js';
import { heartbeatCases } from './heartbeat-cases.js';

/** What each conformance case receives. */
export interface CaseContext {
  /** A key unique to this case and this run, so runs against a shared server never collide. */
  key(suffix?: string): string;
  /** Lease length short enough to wait out in a test (ms). */
  shortMs: number;
  /** Waits long enough for a `shortMs` lease or retention to run out on any store's clock. */
  waitOut(): Promise<void>;
  /** A fresh store from the factory under test (closed by the suite after the case). */
  store(): Promise<Store>;
}

export interface ConformanceCase {
  name: string;
  run(store: Store, ctx: CaseContext): Promise<void>;
}

const LONG = 60_000;
const fp = (c: string) => c.repeat(64);

function acquired(claim: Claim): Lease {
  assert.equal(claim.status, 'acquired', `expected acquired, got ${JSON.stringify(claim)}`);
  return (claim as Extract<Claim, { status: 'acquired' }>).lease;
}

/** A key whose short lease ran out and was taken over: the stale lease and the current one (attempt 2). */
async function takenOver(
  store: Store,
  ctx: CaseContext,
): Promise<{ key: string; stale: Lease; current: Lease }> {
  const key = ctx.key();
  const stale = acquired(
    await store.claim(key, { leaseMs: ctx.shortMs, fingerprint: fp('a'), retentionMs: LONG }),
  );
  await ctx.waitOut();
  const current = acquired(await store.claim(key, { leaseMs: LONG, fingerprint: fp('a') }));
  assert.equal(current.attempt, 2);
  return { key, stale, current };
}

async function claimLong(store: Store, key: string, fingerprint?: string): Promise<Lease> {
  return acquired(await store.claim(key, { leaseMs: LONG, fingerprint }));
}

/**
 * The cases every store must pass. Each names the behaviour it proves; `runConformance` registers
 * them with your test runner. They are exported so a failing case can be run on its own.
 */
export const conformanceCases: readonly ConformanceCase[] = [
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
  ...heartbeatCases,
];

/** A prefix unique to this process and run. */
export function runPrefix(): string {
  return `oo-conf-${randomBytes(4).toString('hex')}`;
}
