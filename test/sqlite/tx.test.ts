// Transactional dedup on SQLite: record(key, { tx }) joins the caller's transaction, through the
// better-sqlite3 Database inside db.transaction, Kysely (SqliteDialect) and Drizzle (better-sqlite3).
import { strict as assert } from 'node:assert';
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { sql as drizzleSql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { Kysely, sql as kyselySql, SqliteDialect } from 'kysely';
import { ConfigError } from '../../src/errors.js';
import { drizzleTx, kyselyTx, sqliteStore } from '../../src/stores/sqlite.js';

const dir = mkdtempSync(join(tmpdir(), 'onceonly-sqlite-tx-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const retentionMs = 60_000;

/**
 * Forks a process that holds a write transaction with `key`'s dedup row in it for `holdMs`, then
 * ends it with `ending`. Resolves once it holds it, with `waitedFor(finishedAt)`: called with the
 * time a second transaction on the key finished, it asserts that one waited for this one's end (it
 * finished after this one began to end: an order, not a duration a stalled test process could
 * shorten), and resolves when the process has exited.
 */
async function heldElsewhere(
  file: string,
  key: string,
  ending: 'commit' | 'rollback',
  holdMs = 400,
): Promise<{ waitedFor: (finishedAt: number) => Promise<void> }> {
  const worker = fork(new URL('./tx-worker.ts', import.meta.url), {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, TX_WORKER: JSON.stringify({ file, key, ending, holdMs }) },
  });
  const exited = new Promise((resolve) => worker.once('exit', resolve));
  const held = new Promise<{ duplicate: boolean }>((resolve, reject) => {
    worker.once('message', (m) => resolve(m as { duplicate: boolean }));
    worker.once('error', reject);
  });
  const ended = new Promise<{ endingAt: number }>((resolve) =>
    worker.on('message', (m: { endingAt?: number }) => {
      if (typeof m.endingAt === 'number') resolve({ endingAt: m.endingAt });
    }),
  );
  assert.equal((await held).duplicate, false);
  return {
    waitedFor: async (finishedAt) => {
      const { endingAt } = await ended;
      assert.ok(
        finishedAt >= endingAt,
        `the second transaction finished after the first began to end (${finishedAt - endingAt} ms)`,
      );
      await exited;
    },
  };
}

function open(name: string) {
  const db = new Database(join(dir, name));
  const store = sqliteStore({ client: db });
  db.exec('CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY)');
  const orders = (id: string) => db.prepare('SELECT COUNT(*) FROM orders WHERE id = ?').pluck().get(id);
  return { db, store, orders };
}

describe('sqliteStore record() inside db.transaction', () => {
  const { db, store, orders } = open('native.db');
  after(() => db.close());
  const insertOrder = db.prepare('INSERT INTO orders (id) VALUES (?)');

  it('recordSync commits the dedup row together with the writes, and skips them on a duplicate', async () => {
    // Prepare
    const placeOrder = db.transaction((id: string) => {
      if (store.recordSync(id, { retentionMs, tx: db }).duplicate) return false;
      insertOrder.run(id);
      return true;
    });
    // Act
    const first = placeOrder('o1');
    const second = placeOrder('o1');
    // Assess
    assert.equal(first, true);
    assert.equal(second, false, 'the repeat saw the committed dedup row');
    assert.equal(orders('o1'), 1);
    assert.equal((await store.inspect('o1'))?.state, 'completed');
  });

  it('a rollback keeps neither the dedup row nor the writes', async () => {
    const placeOrder = db.transaction((id: string) => {
      store.recordSync(id, { retentionMs, tx: db });
      insertOrder.run(id);
      throw new Error('handler failed');
    });
    assert.throws(() => placeOrder('o2'), /handler failed/);
    assert.equal(orders('o2'), 0);
    assert.equal(await store.inspect('o2'), undefined);
    assert.deepEqual(
      await store.record('o2', { retentionMs }),
      { duplicate: false },
      'the key is free again',
    );
  });

  it('the async record() called inside db.transaction joins it too', async () => {
    let pending: Promise<{ duplicate: boolean }> | undefined;
    assert.throws(
      db.transaction(() => {
        pending = store.record('o3', { retentionMs, tx: db });
        throw new Error('rolled back');
      }),
      /rolled back/,
    );
    assert.deepEqual(await pending, { duplicate: false });
    assert.equal(await store.inspect('o3'), undefined, 'rolled back with the transaction');
  });

  it('refuses a tx outside a transaction, since the row would not join anything', async () => {
    assert.throws(() => store.recordSync('o4', { retentionMs, tx: db }), ConfigError);
    await assert.rejects(store.record('o4', { retentionMs, tx: db }), /inside db\.transaction/);
    await assert.rejects(store.record('o4', { retentionMs, tx: {} }), /tx must be/);
    assert.equal(await store.inspect('o4'), undefined);
  });

  for (const ending of ['commit', 'rollback'] as const) {
    it(`a transaction in another process on the same key waits for the first, then sees ${ending === 'commit' ? 'a duplicate' : 'no duplicate'} after its ${ending}`, async () => {
      // Prepare: another process's connection holds a write transaction with the dedup row in it.
      const file = join(dir, `concurrent-${ending}.db`);
      const mine = new Database(file);
      const store2 = sqliteStore({ client: mine, busyTimeout: 5_000 });
      await store2.ready();
      const { waitedFor } = await heldElsewhere(file, 'k', ending);
      // Act: BEGIN IMMEDIATE waits (busy timeout) until the worker ends its transaction.
      const result = mine.transaction(() => store2.recordSync('k', { retentionMs, tx: mine })).immediate();
      const finishedAt = Date.now();
      // Assess
      assert.deepEqual(result, { duplicate: ending === 'commit' });
      await waitedFor(finishedAt);
      mine.close();
    });
  }
});

describe('sqliteStore record() in a Kysely transaction (kyselyTx)', () => {
  const { db, store, orders } = open('kysely.db');
  const k = new Kysely<Record<string, never>>({ dialect: new SqliteDialect({ database: db }) });
  after(() => k.destroy());

  it('commits the dedup row with the writes, and a repeat is a duplicate', async () => {
    const place = (id: string) =>
      k.transaction().execute(async (trx) => {
        const r = await store.record(id, { retentionMs, tx: kyselyTx(trx) });
        if (!r.duplicate) await kyselySql`INSERT INTO orders (id) VALUES (${id})`.execute(trx);
        return r;
      });
    assert.deepEqual(await place('k1'), { duplicate: false });
    assert.deepEqual(await place('k1'), { duplicate: true });
    assert.equal(orders('k1'), 1);
  });

  it('a Kysely transaction on a key another process holds waits for it, then sees a duplicate', async () => {
    const file = join(dir, 'kysely-concurrent.db');
    const mine = new Database(file);
    const store2 = sqliteStore({ client: mine, busyTimeout: 5_000 });
    await store2.ready();
    const k2 = new Kysely<Record<string, never>>({ dialect: new SqliteDialect({ database: mine }) });
    try {
      const { waitedFor } = await heldElsewhere(file, 'kc', 'commit');
      const result = await k2
        .transaction()
        .execute((trx) => store2.record('kc', { retentionMs, tx: kyselyTx(trx) }));
      const finishedAt = Date.now();
      assert.deepEqual(result, { duplicate: true });
      await waitedFor(finishedAt);
    } finally {
      await k2.destroy();
    }
  });

  it('rolls back the dedup row with the writes when the transaction throws', async () => {
    await assert.rejects(
      k.transaction().execute(async (trx) => {
        await store.record('k2', { retentionMs, tx: kyselyTx(trx) });
        await kyselySql`INSERT INTO orders (id) VALUES (${'k2'})`.execute(trx);
        throw new Error('handler failed');
      }),
      /handler failed/,
    );
    assert.equal(orders('k2'), 0);
    assert.equal(await store.inspect('k2'), undefined);
  });
});

describe('sqliteStore record() in a Drizzle transaction (drizzleTx)', () => {
  const { db, store, orders } = open('drizzle.db');
  const d = drizzle({ client: db });
  after(() => db.close());

  it('commits the dedup row with the writes, and skips them on a duplicate', () => {
    const place = (id: string) =>
      d.transaction((tx) => {
        if (store.recordSync(id, { retentionMs, tx: drizzleTx(tx, drizzleSql) }).duplicate) return false;
        tx.run(drizzleSql`INSERT INTO orders (id) VALUES (${id})`);
        return true;
      });
    assert.equal(place('d1'), true);
    assert.equal(place('d1'), false);
    assert.equal(orders('d1'), 1);
  });

  it('rolls back the dedup row with the writes when the transaction throws', async () => {
    assert.throws(
      () =>
        d.transaction((tx) => {
          store.recordSync('d2', { retentionMs, tx: drizzleTx(tx, drizzleSql) });
          tx.run(drizzleSql`INSERT INTO orders (id) VALUES (${'d2'})`);
          throw new Error('handler failed');
        }),
      /handler failed/,
    );
    assert.equal(orders('d2'), 0);
    assert.equal(await store.inspect('d2'), undefined);
  });

  for (const ending of ['commit', 'rollback'] as const) {
    it(`a Drizzle transaction on a key another process holds waits for it, then sees ${ending === 'commit' ? 'a duplicate' : 'no duplicate'} after its ${ending}`, async () => {
      const file = join(dir, `drizzle-concurrent-${ending}.db`);
      const mine = new Database(file);
      const store2 = sqliteStore({ client: mine, busyTimeout: 5_000 });
      await store2.ready();
      const d2 = drizzle({ client: mine });
      const { waitedFor } = await heldElsewhere(file, 'dc', ending);
      const result = d2.transaction(
        (tx) => store2.recordSync('dc', { retentionMs, tx: drizzleTx(tx, drizzleSql) }),
        {
          behavior: 'immediate',
        },
      );
      const finishedAt = Date.now();
      assert.deepEqual(result, { duplicate: ending === 'commit' });
      await waitedFor(finishedAt);
      mine.close();
    });
  }

  it('refuses something that is not a Drizzle better-sqlite3 transaction', () => {
    assert.throws(() => drizzleTx({} as never, drizzleSql), /drizzle-orm\/better-sqlite3/);
    // The db itself is no transaction: the dedup row would commit on its own.
    assert.throws(() => drizzleTx(d, drizzleSql), /not the db itself/);
    assert.throws(() => d.transaction((tx) => drizzleTx(tx, undefined as never)), /sql tag/);
  });
});
