// Transactional dedup on MySQL/MariaDB: record(key, { tx }) joins the caller's transaction, through a
// mysql2 connection, Kysely (MysqlDialect) and Drizzle (drizzle-orm/mysql2).
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sql as drizzleSql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/mysql2';
import { Kysely, sql as kyselySql, MysqlDialect } from 'kysely';
import { createPool as createCallbackPool } from 'mysql2';
import mysql from 'mysql2/promise';
import { drizzleTx, kyselyTx, mysqlStore } from '../../src/stores/mysql.js';
import { reachable, servers } from '../support/servers.js';

const url = servers.mysql;
const up = await reachable('MySQL/MariaDB', url, async () => {
  const c = await mysql.createConnection(url);
  await c.end();
});

if (up) {
  const run = randomBytes(4).toString('hex');
  const table = `oo_tx_${run}`;
  const orders = `oo_tx_orders_${run}`;
  const pool = mysql.createPool({ uri: url, connectionLimit: 8 });
  const store = mysqlStore({ client: pool, table });
  const retentionMs = 60_000;
  let n = 0;
  const key = () => `order-${run}-${n++}`;

  const orderCount = async (id: string) => {
    const [rows] = await pool.query(`SELECT COUNT(*) AS n FROM \`${orders}\` WHERE id = ?`, [id]);
    return Number((rows as { n: unknown }[])[0]!.n);
  };
  /** Settles-or-not probe: whether `p` is still pending after `ms`. */
  const pendingAfter = async (p: Promise<unknown>, ms: number) => {
    let settled = false;
    p.then(
      () => (settled = true),
      () => (settled = true),
    );
    await new Promise((resolve) => setTimeout(resolve, ms));
    return !settled;
  };

  before(async () => {
    await store.ready();
    await pool.query(`CREATE TABLE \`${orders}\` (id VARCHAR(100) PRIMARY KEY) ENGINE=InnoDB`);
  });
  after(async () => {
    await pool.query(`DROP TABLE IF EXISTS \`${table}\`, \`${table}_versions\`, \`${orders}\``);
    await pool.end();
  });

  describe('mysqlStore record() in a mysql2 transaction', () => {
    it('commits the dedup row together with the caller’s writes', async () => {
      // Prepare
      const id = key();
      const conn = await pool.getConnection();
      try {
        // Act
        await conn.beginTransaction();
        assert.deepEqual(await store.record(id, { retentionMs, tx: conn }), { duplicate: false });
        await conn.query(`INSERT INTO \`${orders}\` (id) VALUES (?)`, [id]);
        assert.equal(await store.inspect(id), undefined, 'invisible to others before commit');
        await conn.commit();
      } finally {
        conn.release();
      }
      // Assess
      assert.equal(await orderCount(id), 1);
      assert.equal((await store.inspect(id))?.state, 'completed');
      assert.deepEqual(await store.record(id, { retentionMs }), { duplicate: true });
    });

    it('a rollback keeps neither the dedup row nor the writes', async () => {
      // Prepare
      const id = key();
      const conn = await pool.getConnection();
      try {
        // Act
        await conn.beginTransaction();
        assert.deepEqual(await store.record(id, { retentionMs, tx: conn }), { duplicate: false });
        await conn.query(`INSERT INTO \`${orders}\` (id) VALUES (?)`, [id]);
        await conn.rollback();
      } finally {
        conn.release();
      }
      // Assess
      assert.equal(await orderCount(id), 0);
      assert.equal(await store.inspect(id), undefined);
      assert.deepEqual(
        await store.record(id, { retentionMs }),
        { duplicate: false },
        'the key is free again',
      );
    });

    for (const ending of ['commit', 'rollback'] as const) {
      it(`a second transaction on the same key waits for the first, then sees ${ending === 'commit' ? 'a duplicate' : 'no duplicate'} after its ${ending}`, async () => {
        // Prepare
        const id = key();
        const first = await pool.getConnection();
        const second = await pool.getConnection();
        try {
          await first.beginTransaction();
          await second.beginTransaction();
          assert.deepEqual(await store.record(id, { retentionMs, tx: first }), { duplicate: false });
          // Act
          const waiting = store.record(id, { retentionMs, tx: second });
          const blocked = await pendingAfter(waiting, 300);
          await first[ending]();
          const result = await waiting;
          await second.commit();
          // Assess
          assert.equal(blocked, true, 'the second transaction waited on the first one’s row lock');
          assert.deepEqual(result, { duplicate: ending === 'commit' });
          assert.equal((await store.inspect(id))?.state, 'completed');
        } finally {
          first.release();
          second.release();
        }
      });
    }

    it('rejects a tx that is not a connection', async () => {
      await assert.rejects(
        store.record(key(), { retentionMs, tx: {} }),
        /mysql2 connection inside a transaction/,
      );
    });
  });

  describe('mysqlStore record() in a Kysely transaction (kyselyTx)', () => {
    const callbackPool = createCallbackPool({ uri: url, connectionLimit: 4 });
    const db = new Kysely<Record<string, never>>({ dialect: new MysqlDialect({ pool: callbackPool }) });
    after(() => db.destroy());

    it('commits the dedup row with the writes, and a repeat inside a new transaction is a duplicate', async () => {
      const id = key();
      const first = await db.transaction().execute(async (trx) => {
        const r = await store.record(id, { retentionMs, tx: kyselyTx(trx) });
        await kyselySql`INSERT INTO ${kyselySql.table(orders)} (id) VALUES (${id})`.execute(trx);
        return r;
      });
      const again = await db
        .transaction()
        .execute((trx) => store.record(id, { retentionMs, tx: kyselyTx(trx) }));
      assert.deepEqual(first, { duplicate: false });
      assert.deepEqual(again, { duplicate: true });
      assert.equal(await orderCount(id), 1);
    });

    it('a second Kysely transaction on the same key waits for the first, then sees a duplicate', async () => {
      const id = key();
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let recorded!: () => void;
      const firstRecorded = new Promise<void>((resolve) => (recorded = resolve));
      const first = db.transaction().execute(async (trx) => {
        const r = await store.record(id, { retentionMs, tx: kyselyTx(trx) });
        recorded();
        await held;
        return r;
      });
      await firstRecorded;
      const second = db.transaction().execute((trx) => store.record(id, { retentionMs, tx: kyselyTx(trx) }));
      const blocked = await pendingAfter(second, 300);
      release();
      assert.deepEqual(await first, { duplicate: false });
      assert.deepEqual(await second, { duplicate: true });
      assert.equal(blocked, true, 'the second transaction waited on the first one’s row lock');
    });

    it('rolls back the dedup row with the writes when the transaction throws', async () => {
      const id = key();
      await assert.rejects(
        db.transaction().execute(async (trx) => {
          await store.record(id, { retentionMs, tx: kyselyTx(trx) });
          await kyselySql`INSERT INTO ${kyselySql.table(orders)} (id) VALUES (${id})`.execute(trx);
          throw new Error('handler failed');
        }),
        /handler failed/,
      );
      assert.equal(await orderCount(id), 0);
      assert.equal(await store.inspect(id), undefined);
    });
  });

  describe('mysqlStore record() in a Drizzle transaction (drizzleTx)', () => {
    const db = drizzle({ client: pool });

    it('commits the dedup row with the writes', async () => {
      const id = key();
      const first = await db.transaction(async (tx) => {
        const r = await store.record(id, { retentionMs, tx: drizzleTx(tx, drizzleSql) });
        await tx.execute(drizzleSql`INSERT INTO ${drizzleSql.identifier(orders)} (id) VALUES (${id})`);
        return r;
      });
      assert.deepEqual(first, { duplicate: false });
      assert.deepEqual(await store.record(id, { retentionMs }), { duplicate: true });
      assert.equal(await orderCount(id), 1);
    });

    it('rolls back the dedup row with the writes when the transaction throws', async () => {
      const id = key();
      await assert.rejects(
        db.transaction(async (tx) => {
          await store.record(id, { retentionMs, tx: drizzleTx(tx, drizzleSql) });
          await tx.execute(drizzleSql`INSERT INTO ${drizzleSql.identifier(orders)} (id) VALUES (${id})`);
          throw new Error('handler failed');
        }),
        /handler failed/,
      );
      assert.equal(await orderCount(id), 0);
      assert.equal(await store.inspect(id), undefined);
    });

    it('a second Drizzle transaction on the same key waits for the first, then sees a duplicate', async () => {
      const id = key();
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let recorded!: () => void;
      const firstRecorded = new Promise<void>((resolve) => (recorded = resolve));
      const first = db.transaction(async (tx) => {
        const r = await store.record(id, { retentionMs, tx: drizzleTx(tx, drizzleSql) });
        recorded();
        await held;
        return r;
      });
      await firstRecorded;
      const second = db.transaction((tx) => store.record(id, { retentionMs, tx: drizzleTx(tx, drizzleSql) }));
      const blocked = await pendingAfter(second, 300);
      release();
      assert.deepEqual(await first, { duplicate: false });
      assert.deepEqual(await second, { duplicate: true });
      assert.equal(blocked, true, 'the second transaction waited on the first one’s row lock');
    });

    it('refuses something that is not a Drizzle mysql2 transaction', () => {
      assert.throws(() => drizzleTx(db, drizzleSql), /drizzle-orm\/mysql2, not the db itself/);
      assert.throws(() => drizzleTx({} as never, drizzleSql), /drizzle-orm\/mysql2/);
      assert.throws(() => drizzleTx(db, undefined as never), /sql tag/);
    });
  });
}
