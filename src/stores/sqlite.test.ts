import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { purgeKeepsRetention } from '../../test/support/sql-retention.js';
import { openSqlite, sqliteClientName } from '../../test/support/sqlite-client.js';
import { ConfigError, StoreUnavailableError } from '../errors.js';
import { runConformance } from '../testing/index.js';
import { sqliteMigration, sqliteStore } from './sqlite.js';

const dir = mkdtempSync(join(tmpdir(), 'onceonly-sqlite-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A store on its own connection to `file`, closing the connection with the store. */
function storeOn(file: string, options: Partial<Parameters<typeof sqliteStore>[0]> = {}) {
  const db = openSqlite(file);
  const store = sqliteStore({ client: db.client, ...options });
  return {
    db,
    store: {
      ...store,
      close: async () => {
        await store.close();
        db.close();
      },
    },
  };
}

// Each factory call opens a new connection to one file, like processes sharing a database.
const confFile = join(dir, 'conformance.db');
await runConformance({
  name: `sqliteStore conformance on ${sqliteClientName} (a connection per store, one file)`,
  factory: () => storeOn(confFile).store,
});

describe(`sqliteStore setup on ${sqliteClientName}`, () => {
  it('switches the file to WAL and creates its tables on first use', async () => {
    // Prepare
    const { db, store } = storeOn(join(dir, 'setup.db'));
    assert.equal(db.pragma('journal_mode'), 'delete', 'a new file starts in rollback mode');
    // Act
    await store.claim('k', { leaseMs: 60_000 });
    // Assess
    assert.equal(db.pragma('journal_mode'), 'wal');
    const names = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all()
      .map((row) => (row as { name: string }).name);
    assert.deepEqual(names, ['onceonly', 'onceonly_versions']);
    await store.close();
  });

  it('raises a busy timeout below 5 s, keeps a longer one, and sets a configured one', async () => {
    const file = join(dir, 'busy.db');
    const low = openSqlite(file, { timeout: 100 });
    await sqliteStore({ client: low.client }).ready();
    assert.equal(low.pragma('busy_timeout'), 5_000);
    const high = openSqlite(file, { timeout: 20_000 });
    await sqliteStore({ client: high.client }).ready();
    assert.equal(high.pragma('busy_timeout'), 20_000);
    const set = openSqlite(file);
    await sqliteStore({ client: set.client, busyTimeout: 250 }).ready();
    assert.equal(set.pragma('busy_timeout'), 250);
    for (const db of [low, high, set]) db.close();
  });

  it('runs on tables made from the exported migration with autoCreate off', async () => {
    // Prepare
    const db = openSqlite(join(dir, 'migrated.db'));
    db.exec(sqliteMigration('keys'));
    db.exec(sqliteMigration('keys')); // idempotent
    const store = sqliteStore({ client: db.client, table: 'keys', autoCreate: false });
    // Act
    const claim = await store.claim('k', { leaseMs: 60_000 });
    // Assess
    assert.equal(claim.status, 'acquired');
    assert.equal(await store.advance('e', 2 ** 53 - 1), true, 'the largest safe integer is a version');
    assert.equal(await store.advance('e', 2 ** 53 - 2), false);
    assert.equal(await store.advance('f', 0.5), true, 'fractions are versions too');
    assert.equal(await store.advance('f', 0.25), false);
    db.close();
  });

  it('without the tables and with autoCreate off, fails with StoreUnavailableError', async () => {
    const db = openSqlite(':memory:');
    const store = sqliteStore({ client: db.client, autoCreate: false });
    await assert.rejects(store.claim('k', { leaseMs: 1_000 }), (err: unknown) => {
      assert.ok(err instanceof StoreUnavailableError);
      assert.match(err.message, /^onceonly: SQLite store could not claim a key/);
      return true;
    });
    db.close();
  });

  it('rejects a bad table name, client or busy timeout', () => {
    const db = openSqlite(':memory:');
    assert.throws(() => sqliteStore({ client: db.client, table: 'a"; DROP TABLE x' }), ConfigError);
    assert.throws(
      () => sqliteStore({ client: {} as never }),
      /better-sqlite3 Database.*node:sqlite DatabaseSync/,
    );
    assert.throws(() => sqliteStore({ client: db.client, busyTimeout: -1 }), /busyTimeout/);
    db.close();
  });
});

describe(`sqliteStore recordSync in the caller's transaction on ${sqliteClientName}`, () => {
  it('commits the dedup row with the writes, rolls both back together, and refuses a tx outside one', async () => {
    // Prepare
    const { db, store } = storeOn(join(dir, 'caller-tx.db'));
    db.exec('CREATE TABLE orders (id TEXT PRIMARY KEY)');
    const place = (id: string, fail = false) =>
      db.transaction(
        () => {
          if (store.recordSync(id, { retentionMs: 60_000, tx: db.client }).duplicate) return false;
          db.prepare('INSERT INTO orders (id) VALUES (?)').run(id);
          if (fail) throw new Error('handler failed');
          return true;
        },
        { immediate: true },
      );
    const orders = () =>
      db
        .prepare('SELECT id FROM orders ORDER BY id')
        .all()
        .map((r) => (r as { id: string }).id);
    // Act
    const first = place('o1');
    const again = place('o1');
    assert.throws(() => place('o2', true), /handler failed/);
    // Assess
    assert.deepEqual([first, again], [true, false], 'the repeat saw the committed dedup row');
    assert.deepEqual(orders(), ['o1']);
    assert.equal(await store.inspect('o2'), undefined, 'rolled back with the writes');
    assert.throws(
      () => store.recordSync('o3', { retentionMs: 1_000, tx: db.client }),
      /inside db\.transaction/,
    );
    await store.close();
  });

  it('refuses a node:sqlite DatabaseSync without isTransaction (before Node 22.16), naming what it needs', () => {
    const old = { prepare() {}, exec() {}, close() {}, open() {}, location() {} };
    assert.throws(() => sqliteStore({ client: old as never }), /DatabaseSync on Node 22\.16\+/);
  });
});

describe(`sqliteStore locking on ${sqliteClientName}`, () => {
  it("waits up to the busy timeout for another connection's write lock, then fails as unavailable", async () => {
    // Prepare: another connection holds the write lock.
    const file = join(dir, 'locking.db');
    const { store } = storeOn(file);
    await store.ready();
    const other = openSqlite(file);
    other.prepare('BEGIN IMMEDIATE').run();
    const { store: impatient } = storeOn(file, { busyTimeout: 50 });
    // Act
    const started = Date.now();
    const failed = impatient.claim('k', { leaseMs: 60_000 });
    // Assess
    await assert.rejects(failed, (err: unknown) => {
      assert.ok(err instanceof StoreUnavailableError);
      assert.match(err.message, /SQLITE_BUSY.*raise busyTimeout/);
      return true;
    });
    assert.ok(Date.now() - started >= 40, 'it waited for the busy timeout');
    other.prepare('COMMIT').run();
    assert.equal((await store.claim('k', { leaseMs: 60_000 })).status, 'acquired', 'free again');
    other.close();
    await store.close();
    await impatient.close();
  });
});

describe('sqliteStore purgeExpired', () => {
  it('deletes completed keys past retention and long-abandoned leases, keeps the rest', async () => {
    // Prepare
    const { store } = storeOn(join(dir, 'purge.db'));
    await store.record('done-short', { retentionMs: 1 });
    await store.record('done-long', { retentionMs: 60_000 });
    await store.claim('lease-ran-out', { leaseMs: 1 });
    await store.claim('lease-live', { leaseMs: 60_000 });
    await store.advance('entity', 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Act
    const kept = await store.purgeExpired({ batchSize: 1 });
    const deleted = await store.purgeExpired({ leaseGraceMs: 0, versionsUnusedForMs: 0 });
    // Assess
    assert.equal(kept, 1, 'only the completed key past retention; the ran-out lease is in its grace');
    assert.equal(deleted, 2, 'the abandoned lease and the unused version');
    assert.equal((await store.inspect('done-long'))?.state, 'completed');
    assert.equal((await store.inspect('lease-live'))?.state, 'processing');
    assert.equal(await store.inspect('lease-ran-out'), undefined);
    assert.equal(await store.advance('entity', 1), true, 'the version was forgotten');
    await store.close();
  });
});

describe('sqliteStore purgeExpired and retention', () => {
  it("keeps a released or run-out row for its claim's retentionMs past leaseGraceMs, then deletes it", async () => {
    const store = storeOn(join(dir, 'retention.db')).store;
    await purgeKeepsRetention(store);
    await store.close();
  });
});

describe('sqliteStore time', () => {
  it("takes time from SQLite's clock in milliseconds", async () => {
    const { db, store } = storeOn(join(dir, 'clock.db'));
    const sqliteNow = () =>
      (
        db
          .prepare("SELECT CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) AS ms")
          .get() as {
          ms: number;
        }
      ).ms;
    const before = sqliteNow();
    const claims = await Promise.all(['a', 'b', 'c'].map((k) => store.claim(k, { leaseMs: 10_000 })));
    const after = sqliteNow();
    for (const claim of claims) {
      assert.equal(claim.status, 'acquired');
      if (claim.status !== 'acquired') continue;
      const at = claim.lease.expiresAt.getTime() - 10_000;
      assert.ok(at >= before && at <= after, 'expiry is SQLite now + lease');
    }
    await store.close();
  });
});
