import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { reachable, servers } from '../../test/support/servers.js';
import { sideBySide } from '../../test/support/side-by-side.js';
import { purgeKeepsRetention } from '../../test/support/sql-retention.js';
import { StoreUnavailableError } from '../errors.js';
import { runConformance } from '../testing/index.js';
import { mysqlMigration, mysqlStore } from './mysql.js';

const url = servers.mysql;
const up = await reachable('MySQL/MariaDB', url, async () => {
  const c = await mysql.createConnection(url);
  await c.end();
});

if (up) {
  const pool = mysql.createPool({ uri: url, connectionLimit: 10 });
  // mysql2 sets CLIENT_FOUND_ROWS by default; a pool without it counts changed rows instead. The store
  // must give the same answers on both.
  const noFoundRows = mysql.createPool({ uri: url, connectionLimit: 10, flags: ['-FOUND_ROWS'] });
  const run = randomBytes(4).toString('hex');
  const tables: string[] = [];
  const table = (name: string) => {
    const t = `oo_${name}_${run}`;
    tables.push(t, `${t}_versions`);
    return t;
  };
  after(async () => {
    for (const t of tables) await pool.query(`DROP TABLE IF EXISTS \`${t}\``);
    await pool.end();
    await noFoundRows.end();
  });

  const confTable = table('conf');
  const plainTable = table('plain');
  sideBySide('mysqlStore conformance, the pools side by side', (runner) => [
    runConformance({
      name: 'mysqlStore conformance (mysql2 defaults: CLIENT_FOUND_ROWS on; prepared statements)',
      factory: () => mysqlStore({ client: pool, table: confTable }),
      runner,
    }),
    runConformance({
      name: 'mysqlStore conformance (CLIENT_FOUND_ROWS off, text protocol: prepare false)',
      factory: () => mysqlStore({ client: noFoundRows, table: plainTable, prepare: false }),
      runner,
    }),
  ]);

  describe('mysqlStore schema', () => {
    it('creates its tables on first use', async () => {
      // Prepare
      const name = table('auto');
      const store = mysqlStore({ client: pool, table: name });
      // Act
      await store.claim('k', { leaseMs: 60_000 });
      // Assess
      const [rows] = await pool.query('SHOW TABLES LIKE ?', [`${name}%`]);
      assert.deepEqual((rows as Record<string, string>[]).map((r) => Object.values(r)[0]).sort(), [
        name,
        `${name}_versions`,
      ]);
    });

    it('runs on tables made from the exported migration with autoCreate off', async () => {
      // Prepare
      const name = table('migrated');
      const conn = await mysql.createConnection({ uri: url, multipleStatements: true });
      await conn.query(mysqlMigration(name));
      await conn.query(mysqlMigration(name)); // idempotent
      await conn.end();
      const store = mysqlStore({ client: pool, table: name, autoCreate: false });
      // Act
      const claim = await store.claim('k', { leaseMs: 60_000, fingerprint: 'f' });
      // Assess
      assert.equal(claim.status, 'acquired');
      assert.equal(await store.advance('e', 2 ** 53 - 1), true, 'the largest safe integer is a version');
      assert.equal(await store.advance('e', 2 ** 53 - 2), false);
    });

    it('works for a user without the CREATE privilege once the tables exist', async () => {
      // Prepare: tables made by an owner; a user who may only read and write rows.
      const name = table('grants');
      await mysqlStore({ client: pool, table: name }).ready();
      const user = `oo_rw_${run}`;
      await pool.query(`CREATE USER '${user}'@'%' IDENTIFIED BY 'pw'`);
      try {
        for (const t of [name, `${name}_versions`])
          await pool.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON \`${t}\` TO '${user}'@'%'`);
        const limited = mysql.createPool({ uri: url.replace('root@', `${user}:pw@`), connectionLimit: 2 });
        try {
          // Act
          const store = mysqlStore({ client: limited, table: name });
          const claim = await store.claim('k', { leaseMs: 60_000 });
          // Assess
          assert.equal(claim.status, 'acquired');
        } finally {
          await limited.end();
        }
      } finally {
        await pool.query(`DROP USER '${user}'@'%'`);
      }
    });

    it('without the tables and with autoCreate off, fails with StoreUnavailableError naming the cause', async () => {
      const store = mysqlStore({ client: pool, table: `oo_missing_${run}`, autoCreate: false });
      await assert.rejects(store.claim('k', { leaseMs: 1_000 }), (err: unknown) => {
        assert.ok(err instanceof StoreUnavailableError);
        assert.match(err.message, /^onceonly: MySQL store could not claim a key \(ER_NO_SUCH_TABLE\)/);
        return true;
      });
    });

    it('rejects table names that are not plain identifiers', () => {
      assert.throws(() => mysqlStore({ client: pool, table: 'a`; DROP TABLE x' }), /plain identifier/);
      assert.throws(() => mysqlStore({ client: {} as never }), /mysql2\/promise Pool/);
    });
  });

  describe('mysqlStore purgeExpired', () => {
    it('deletes completed keys past retention and long-abandoned leases, keeps the rest', async () => {
      // Prepare
      const store = mysqlStore({ client: pool, table: table('purge') });
      await store.record('done-short', { retentionMs: 1 });
      await store.record('done-long', { retentionMs: 60_000 });
      await store.claim('lease-ran-out', { leaseMs: 1 });
      await store.claim('lease-live', { leaseMs: 60_000 });
      await store.advance('entity', 1);
      await new Promise((resolve) => setTimeout(resolve, 50));
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
    });
  });

  describe('mysqlStore purgeExpired and retention', () => {
    it("keeps a released or run-out row for its claim's retentionMs past leaseGraceMs, then deletes it", async () => {
      const store = mysqlStore({ client: pool, table: table('retention') });
      await purgeKeepsRetention(store);
    });
  });

  describe('mysqlStore under lock contention', () => {
    it('runs a statement again after a lock wait timeout and then succeeds', async () => {
      // Prepare: connections that give up on a row lock after 1 s, and a transaction holding the row.
      const name = table('locks');
      const impatient = mysql.createPool({ uri: url, connectionLimit: 2 });
      impatient.pool.on('connection', (c) => {
        c.query('SET SESSION innodb_lock_wait_timeout = 1');
      });
      const store = mysqlStore({ client: impatient, table: name });
      const first = await store.claim('k', { leaseMs: 60_000 });
      assert.equal(first.status, 'acquired');
      const holder = await pool.getConnection();
      try {
        await holder.query('BEGIN');
        await holder.query(`SELECT * FROM \`${name}\` FOR UPDATE`);
        // Act: the claim waits, times out (1205), retries; the holder lets go after 1.5 s.
        const started = Date.now();
        const pending = store.claim('k', { leaseMs: 60_000 });
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        await holder.query('COMMIT');
        const claim = await pending;
        // Assess
        assert.equal(claim.status, 'in-flight');
        assert.ok(Date.now() - started >= 1_000, 'the claim did wait out at least one lock timeout');
      } finally {
        holder.release();
        await impatient.end();
      }
    });

    it('gives up after deadlockRetries and reports the store unavailable', async () => {
      const name = table('giveup');
      const impatient = mysql.createPool({ uri: url, connectionLimit: 2 });
      impatient.pool.on('connection', (c) => {
        c.query('SET SESSION innodb_lock_wait_timeout = 1');
      });
      const store = mysqlStore({ client: impatient, table: name, deadlockRetries: 0 });
      await store.claim('k', { leaseMs: 60_000 });
      const holder = await pool.getConnection();
      try {
        await holder.query('BEGIN');
        await holder.query(`SELECT * FROM \`${name}\` FOR UPDATE`);
        await assert.rejects(store.claim('k', { leaseMs: 60_000 }), (err: unknown) => {
          assert.ok(err instanceof StoreUnavailableError);
          assert.match(err.message, /ER_LOCK_WAIT_TIMEOUT/);
          return true;
        });
      } finally {
        await holder.query('ROLLBACK');
        holder.release();
        await impatient.end();
      }
    });
  });

  describe('mysqlStore time', () => {
    it("takes time from the server's clock, not the client's", async () => {
      const store = mysqlStore({ client: pool, table: table('clock') });
      const [rows] = await pool.query(
        "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000 AS now_ms",
      );
      const serverNow = Number((rows as { now_ms: unknown }[])[0]!.now_ms);
      const claim = await store.claim('k', { leaseMs: 10_000 });
      assert.equal(claim.status, 'acquired');
      if (claim.status !== 'acquired') return;
      const offset = claim.lease.expiresAt.getTime() - 10_000 - serverNow;
      assert.ok(offset >= 0 && offset < 1_000, `expiry is server now + lease (off by ${offset} ms)`);
      const more = await Promise.all(['a', 'b', 'c'].map((k) => store.claim(k, { leaseMs: 10_000 })));
      const millis = more.map((c) => (c.status === 'acquired' ? c.lease.expiresAt.getTime() % 1000 : 0));
      assert.ok(
        millis.some((ms) => ms !== 0),
        'millisecond precision, not whole seconds',
      );
    });
  });
}
