import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { Store } from '../core/types.js';
import { StoreFullError } from '../errors.js';
import { conformanceCases, runCase, runConformance } from '../testing/index.js';
import { memoryStore } from './memory.js';

// Every call of the factory must see the same data, like clients of one server.
const shared = memoryStore();
await runConformance({
  name: 'memoryStore conformance',
  factory: () => ({ ...shared, close: async () => {} }),
});

describe('memoryStore bounds', () => {
  it('never forgets a completed key inside its retention to make room: a new key is refused instead', async () => {
    // Prepare: a full store of two completed keys and a live lease.
    let now = 1_000;
    const store = memoryStore({ maxEntries: 3, now: () => now });
    for (const key of ['a', 'b']) {
      const claim = await store.claim(key, { leaseMs: 60_000 });
      assert.equal(claim.status, 'acquired');
      if (claim.status === 'acquired') await store.confirm(claim.lease, { retentionMs: 60_000 });
    }
    await store.claim('live', { leaseMs: 60_000 });
    // Act: a flood of new keys.
    for (const key of ['c', 'd']) {
      await assert.rejects(store.claim(key, { leaseMs: 60_000 }), StoreFullError);
      await assert.rejects(store.record(key, { retentionMs: 60_000 }), StoreFullError);
    }
    // Assess: the completed events are still duplicates.
    assert.deepEqual(await store.claim('a', { leaseMs: 60_000 }), {
      status: 'completed',
      sameFingerprint: true,
    });
    assert.equal((await store.inspect('b'))?.state, 'completed');
    assert.equal((await store.inspect('live'))?.state, 'processing', 'live lease kept');
    assert.equal(store.size, 3);
    // Once a retention is over, its key makes room.
    now += 60_000;
    assert.equal((await store.claim('c', { leaseMs: 60_000 })).status, 'acquired');
    assert.equal(store.size, 3);
  });

  it('never forgets a released or run-out record inside its retention to make room, then drops the soonest over', async () => {
    let now = 1_000;
    const store = memoryStore({ maxEntries: 3, now: () => now });
    const released = await store.claim('released', { leaseMs: 60_000, retentionMs: 10_000 });
    if (released.status === 'acquired') await store.release(released.lease);
    await store.claim('ran-out', { leaseMs: 100, retentionMs: 5_000 });
    await store.claim('default', { leaseMs: 100 });
    now += 1_000;
    await assert.rejects(store.claim('new', { leaseMs: 60_000 }), StoreFullError);
    assert.equal((await store.inspect('released'))?.state, 'released');
    assert.equal((await store.inspect('ran-out'))?.attempt, 1);
    // ran-out's grace ends first (lease end + 5 s), released's at release + 10 s, default's after 1 h.
    now = 1_000 + 100 + 5_000;
    assert.equal((await store.claim('new', { leaseMs: 60_000 })).status, 'acquired');
    assert.equal(await store.inspect('ran-out'), undefined, 'the one whose time was over');
    assert.equal((await store.inspect('released'))?.state, 'released');
    now = 1_000 + 10_000;
    assert.equal((await store.record('new-2', { retentionMs: 60_000 })).duplicate, false);
    assert.equal(await store.inspect('released'), undefined);
    assert.equal((await store.inspect('default'))?.state, 'processing', 'kept for the default hour');
    await assert.rejects(store.claim('new-3', { leaseMs: 60_000 }), StoreFullError);
    now = 1_000 + 100 + 3_600_000;
    assert.equal((await store.claim('new-3', { leaseMs: 60_000 })).status, 'acquired');
    assert.equal(await store.inspect('default'), undefined);
  });

  it('refuses a confirm that must re-create a vanished record when full, and accepts it once there is room', async () => {
    let now = 1_000;
    const store = memoryStore({ maxEntries: 2, now: () => now });
    const claim = await store.claim('k', { leaseMs: 100, retentionMs: 100 });
    assert.equal(claim.status, 'acquired');
    if (claim.status !== 'acquired') return;
    now += 1_000;
    assert.equal(await store.inspect('k'), undefined, 'vanished');
    await store.claim('a', { leaseMs: 60_000, retentionMs: 1 });
    await store.claim('b', { leaseMs: 60_000, retentionMs: 1 });
    await assert.rejects(store.confirm(claim.lease, { retentionMs: 60_000 }), StoreFullError);
    now += 61_000;
    assert.equal(await store.confirm(claim.lease, { retentionMs: 60_000 }), true);
    assert.equal((await store.inspect('k'))?.state, 'completed');
  });

  it('makes room under a long flood without losing a completed key inside its retention', async () => {
    // Keys arrive one per ms, each completed for 50 ms, in a store of 100: every claim finds room in
    // keys whose retention is over, and no completed key is forgotten early.
    let now = 0;
    const store = memoryStore({ maxEntries: 100, now: () => now });
    for (let i = 0; i < 5_000; i++) {
      now = i;
      const claim = await store.claim(`k${i}`, { leaseMs: 10 });
      assert.equal(claim.status, 'acquired');
      if (claim.status === 'acquired') await store.confirm(claim.lease, { retentionMs: 50 });
      if (i >= 50)
        assert.equal((await store.claim(`k${i - 49}`, { leaseMs: 10 })).status, 'completed', `k${i - 49}`);
    }
    assert.ok(store.size <= 100);
  });

  it('never drops a live lease: claim throws StoreFullError when every entry is live', async () => {
    const store = memoryStore({ maxEntries: 2 });
    await store.claim('a', { leaseMs: 60_000 });
    await store.claim('b', { leaseMs: 60_000 });
    await assert.rejects(store.claim('c', { leaseMs: 60_000 }), (err: unknown) => {
      assert.ok(err instanceof StoreFullError);
      assert.equal(err.code, 'store_full');
      assert.equal(err.status, 503);
      return true;
    });
    await assert.rejects(store.record('c', { retentionMs: 1 }), StoreFullError);
    assert.equal((await store.inspect('a'))?.state, 'processing');
    assert.equal((await store.inspect('b'))?.state, 'processing');
  });

  it('makes room by dropping a lease that ran out once its retention is over too', async () => {
    let now = 1_000;
    const store = memoryStore({ maxEntries: 2, now: () => now });
    await store.claim('a', { leaseMs: 100, retentionMs: 100 });
    await store.claim('b', { leaseMs: 10_000 });
    now += 150;
    await assert.rejects(store.claim('c', { leaseMs: 100 }), StoreFullError);
    now += 100;
    assert.equal((await store.claim('c', { leaseMs: 100 })).status, 'acquired');
    assert.equal(await store.inspect('a'), undefined);
    assert.equal((await store.inspect('b'))?.state, 'processing');
  });

  it('uses the injected clock for leases and retention', async () => {
    let now = 0;
    const store = memoryStore({ now: () => now });
    const claim = await store.claim('k', { leaseMs: 1_000 });
    assert.equal(claim.status, 'acquired');
    now = 999;
    assert.equal((await store.claim('k', { leaseMs: 1_000 })).status, 'in-flight');
    now = 1_000;
    const takeover = await store.claim('k', { leaseMs: 1_000 });
    assert.equal(takeover.status === 'acquired' && takeover.lease.attempt, 2);
  });

  it('keeps any fingerprint and token intact in packed completed entries', async () => {
    const store = memoryStore();
    const odd = 'not-hex: ключ 🔑 {}'.repeat(3);
    assert.equal((await store.record('a', { retentionMs: 60_000, fingerprint: odd })).duplicate, false);
    assert.equal((await store.inspect('a'))?.fingerprint, odd);
    assert.deepEqual(await store.claim('a', { leaseMs: 1, fingerprint: odd }), {
      status: 'completed',
      sameFingerprint: true,
    });
    // A lease with a token that is not lowercase hex, whose record vanished (lease and retention over).
    let now = Date.now();
    const clocked = memoryStore({ now: () => now });
    const claim = await clocked.claim('b', { leaseMs: 10, fingerprint: 'ABCDEF', retentionMs: 10 });
    assert.equal(claim.status, 'acquired');
    if (claim.status !== 'acquired') return;
    const lease = { ...claim.lease, token: 'Upper-Case-Token' };
    now += 100;
    const store2 = clocked;
    assert.equal(
      await store2.confirm(lease, { retentionMs: 60_000 }),
      true,
      'vanished: written as completed',
    );
    assert.equal(await store2.confirm(lease, { retentionMs: 60_000 }), true, 'same owner again');
    assert.equal(await store2.confirm({ ...lease, token: 'other' }, { retentionMs: 60_000 }), false);
    const view = await store2.inspect('b');
    assert.equal(view?.fingerprint, 'ABCDEF');
    assert.equal(view?.attempt, 1);
    assert.ok(view && view.expiresAt.getTime() > now + 50_000);
  });

  it('makes room with a clock that reads fractional milliseconds (performance.timeOrigin + now)', async () => {
    let now = 1_000_000.5;
    const store = memoryStore({ maxEntries: 2, now: () => now });
    for (const key of ['a', 'b']) {
      const claim = await store.claim(key, { leaseMs: 1_000, retentionMs: 10 });
      assert.equal(claim.status, 'acquired');
      if (claim.status === 'acquired')
        assert.equal(await store.confirm(claim.lease, { retentionMs: 10 }), true);
      now += 0.25;
    }
    now += 20;
    // Both completed keys are past their retention: one is forgotten to make room.
    assert.equal((await store.claim('c', { leaseMs: 1_000 })).status, 'acquired');
    assert.equal(store.size, 2);
  });

  it('a completion time it cannot hold (past 2^48 ms) fails the confirm and leaves the lease as it was, to run out and be taken over', async () => {
    let now = 2 ** 48 - 10_000;
    const store = memoryStore({ now: () => now });
    const claim = await store.claim('far', { leaseMs: 1_000, retentionMs: 60_000 });
    assert.equal(claim.status, 'acquired');
    if (claim.status !== 'acquired') return;
    await assert.rejects(store.confirm(claim.lease, { retentionMs: 60_000 }), RangeError);
    const view = await store.inspect('far');
    assert.equal(view?.state, 'processing');
    assert.equal(view?.expiresAt.getTime(), claim.lease.expiresAt.getTime(), 'the lease end it had');
    now += 1_500;
    const takeover = await store.claim('far', { leaseMs: 1_000, retentionMs: 60_000 });
    assert.equal(takeover.status === 'acquired' && takeover.lease.attempt, 2);
  });

  it('packs every shape of fingerprint back exactly: hex at and past 255 bytes, hex gone wrong late, empty, after a long one', async () => {
    const store = memoryStore();
    const values = [
      'ab'.repeat(255), // 255 bytes of hex: the longest packed as bytes
      'ab'.repeat(256), // one byte more: as text
      `${'0'.repeat(62)}0G`, // hex until its last digit
      `${'f'.repeat(63)}A`, // upper case is another string
      'abc', // odd length
      '',
      'é'.repeat(70_000), // grows the packing buffer
      'a1'.repeat(32), // and a plain SHA-256 hex after it
    ];
    for (const [i, fingerprint] of values.entries()) {
      const claim = await store.claim(`shape${i}`, { leaseMs: 60_000, fingerprint });
      assert.equal(claim.status, 'acquired');
      if (claim.status !== 'acquired') return;
      assert.equal(await store.confirm(claim.lease, { retentionMs: 60_000 }), true);
    }
    for (const [i, fingerprint] of values.entries()) {
      assert.equal((await store.inspect(`shape${i}`))?.fingerprint, fingerprint, `value ${i}`);
      assert.deepEqual(await store.claim(`shape${i}`, { leaseMs: 1, fingerprint }), {
        status: 'completed',
        sameFingerprint: true,
      });
      const other =
        fingerprint === '' ? 'x' : `${fingerprint.slice(0, -1)}${fingerprint.endsWith('b') ? 'c' : 'b'}`;
      assert.deepEqual(await store.claim(`shape${i}`, { leaseMs: 1, fingerprint: other }), {
        status: 'completed',
        sameFingerprint: false,
      });
    }
  });

  it('keeps a fingerprint over 65,535 bytes of UTF-8 intact when it completes', async () => {
    const store = memoryStore();
    const long = `${'é'.repeat(40_000)}tail`;
    const claim = await store.claim('long', { leaseMs: 60_000, fingerprint: long });
    assert.equal(claim.status, 'acquired');
    if (claim.status !== 'acquired') return;
    assert.equal(await store.confirm(claim.lease, { retentionMs: 60_000 }), true);
    assert.equal((await store.inspect('long'))?.fingerprint, long);
    assert.deepEqual(await store.claim('long', { leaseMs: 1, fingerprint: long }), {
      status: 'completed',
      sameFingerprint: true,
    });
    assert.deepEqual(await store.record('long-record', { retentionMs: 60_000, fingerprint: long }), {
      duplicate: false,
    });
    assert.equal((await store.inspect('long-record'))?.fingerprint, long);
  });

  it('counts records by state and lists the oldest leases first', async () => {
    let now = 0;
    const store = memoryStore({ now: () => now });
    await store.claim('stuck', { leaseMs: 100 });
    now = 10;
    await store.claim('live', { leaseMs: 10_000 });
    const done = await store.claim('done', { leaseMs: 10_000 });
    if (done.status === 'acquired') await store.confirm(done.lease, { retentionMs: 10_000 });
    now = 300;
    const failed = await store.claim('failed', { leaseMs: 10_000 });
    if (failed.status === 'acquired') await store.release(failed.lease);
    now = 500;
    assert.deepEqual(await store.stats(), { processing: 1, takeable: 2, completed: 1 });
    const oldest = await store.oldestLeases(10);
    assert.deepEqual(
      oldest.map((v) => [v.key, v.state]),
      [
        ['stuck', 'processing'],
        ['failed', 'released'],
        ['live', 'processing'],
      ],
    );
    assert.equal((await store.oldestLeases(1)).length, 1);
    // An hour after its lease's end (the default retention of a takeable record) stuck is forgotten;
    // live ran out at 10,010 and failed was released at 300, so both are still takeable.
    now = 100 + 3_600_000;
    assert.deepEqual(await store.stats(), { processing: 0, takeable: 2, completed: 0 });
    assert.equal(await store.inspect('stuck'), undefined);
  });

  it('rejects a bad maxEntries and a non-finite version', async () => {
    assert.throws(() => memoryStore({ maxEntries: 0 }), /maxEntries/);
    await assert.rejects(memoryStore().advance('e', Number.NaN), /finite number/);
  });

  it('keeps no timer that holds the process open', async () => {
    const before = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const store = memoryStore();
    await store.claim('k', { leaseMs: 60_000 });
    assert.equal(process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length, before);
  });
});

describe('the conformance suite catches a broken store', () => {
  // A naive store whose confirm skips the owner check (the usual `SET key done` after the handler):
  // a stale worker then overwrites a newer owner's claim.
  function confirmWithoutTokenCheck(): Store {
    const inner = memoryStore();
    const records = new Map<string, { completed: boolean; expiresAt: number }>();
    return {
      ...inner,
      async claim(key, options) {
        const claim = await inner.claim(key, options);
        if (claim.status === 'acquired')
          records.set(key, { completed: false, expiresAt: Date.now() + options.leaseMs });
        const naive = records.get(key);
        if (claim.status !== 'acquired' && naive?.completed)
          return { status: 'completed', sameFingerprint: true };
        return claim;
      },
      async confirm(lease, options) {
        records.set(lease.key, { completed: true, expiresAt: Date.now() + options.retentionMs });
        await inner.release(lease);
        return true;
      },
    };
  }

  it("fails the stale owner's case on a confirm without the token check", async () => {
    const staleCase = conformanceCases.find((c) => c.name.startsWith("a stale owner's confirm"))!;
    const broken = confirmWithoutTokenCheck();
    await assert.rejects(
      runCase(staleCase, () => broken, { shortMs: 50 }),
      /stale confirm/,
    );
  });

  it('passes the same case on the real memoryStore', async () => {
    const staleCase = conformanceCases.find((c) => c.name.startsWith("a stale owner's confirm"))!;
    await runCase(staleCase, () => memoryStore(), { shortMs: 50 });
  });
});

describe('runConformance with a runner other than node:test', () => {
  /** A minimal BDD runner: records what is registered, runs it when asked. */
  function recordingRunner() {
    const suites: string[] = [];
    const tests: { name: string; body: () => Promise<void> }[] = [];
    return {
      suites,
      tests,
      describe: (name: string, body: () => void) => {
        suites.push(name);
        body();
      },
      it: (name: string, body: () => Promise<void>) => {
        tests.push({ name, body });
      },
    };
  }

  it('registers every case with a runner passed in, and each passes on memoryStore', async () => {
    const runner = recordingRunner();
    await runConformance({
      name: 'memory via a custom runner',
      factory: () => ({ ...shared, close: async () => {} }),
      runner,
      shortMs: 60,
    });
    assert.deepEqual(runner.suites, ['memory via a custom runner']);
    assert.deepEqual(
      runner.tests.map((t) => t.name),
      conformanceCases.map((c) => c.name),
    );
    for (const t of runner.tests) await t.body();
  });

  it('detects describe and it as globals (Vitest with globals, Jest, Mocha) when none is passed', async () => {
    const runner = recordingRunner();
    const g = globalThis as { describe?: unknown; it?: unknown };
    const saved = { describe: g.describe, it: g.it };
    g.describe = runner.describe;
    g.it = runner.it;
    try {
      await runConformance({
        name: 'memory via globals',
        factory: () => memoryStore(),
        only: 'owner tokens',
      });
    } finally {
      g.describe = saved.describe;
      g.it = saved.it;
    }
    assert.deepEqual(runner.suites, ['memory via globals']);
    assert.deepEqual(
      runner.tests.map((t) => t.name),
      ['owner tokens are random per claim'],
    );
    await runner.tests[0]!.body();
  });
});
