import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { reachable, servers } from '../../test/support/servers.js';
import { SCHEMA_TABLES, sqlInboxSchemaSpec } from '../../test/support/sql-inbox-schema.js';
import type { InboxAccepted, InboxAcceptInput } from '../core/inbox.js';
import { runInboxConformance } from '../testing/index.js';
import { type MysqlQueryable, mysqlInboxMigration, mysqlStore } from './mysql.js';

// A table of this run (`<table>_inbox`), created by the first inbox, dropped at the end.
const table = `oo_inbox_${randomBytes(4).toString('hex')}`;

const pool = mysql.createPool({ uri: servers.mysql, connectionLimit: 8 });
const up = await reachable('MySQL', servers.mysql, () => pool.query('SELECT 1'));

if (up) {
  const connection = await mysql.createConnection({ uri: servers.mysql });
  after(async () => {
    for (const t of [table, ...SCHEMA_TABLES.map((name) => `${table}_${name}`)])
      await pool.query(`DROP TABLE IF EXISTS \`${t}_inbox\``);
    await pool.end();
    await connection.end();
  });

  await runInboxConformance({
    name: 'mysqlStore inbox conformance (mysql2 Pool)',
    factory: () => mysqlStore({ client: pool, table }).inbox,
    runner: { describe, it },
  });
  // One Connection: the inbox queues its own transactions on it.
  await runInboxConformance({
    name: 'mysqlStore inbox conformance (one mysql2 Connection)',
    factory: () => mysqlStore({ client: connection, table }).inbox,
    runner: { describe, it },
  });
  sqlInboxSchemaSpec({
    label: 'mysqlStore',
    migrationName: 'mysqlInboxMigration',
    migration: mysqlInboxMigration,
    apply: async (ddl) => {
      for (const statement of ddl.split(';').filter((x) => x.trim() !== '')) await pool.query(statement);
    },
    inbox: (t, autoCreate) => mysqlStore({ client: pool, table: t, autoCreate }).inbox,
    ready: (t, options) => mysqlStore({ client: pool, table: t }).ready(options),
    table: (name) => `${table}_${name}`,
    setColumn: async (t, key, column, value) =>
      void (await pool.query(`UPDATE \`${t}_inbox\` SET ${column} = ? WHERE entry_key = ?`, [value, key])),
  });

  describe('mysqlStore inbox accept with a claim', () => {
    it('a claim that ran out and was taken by a worker before accept read it back: accepted, with no lease (before: a lease expiring at an invalid date)', async () => {
      const other = mysqlStore({ client: pool, table }).inbox;
      const receiver = `claim-${randomBytes(4).toString('hex')}`;
      let taken = 0;
      let armed = true;
      // The pool, with a worker's take landing right after the accept's INSERT (a slow round trip).
      const after = async <T>(sql: string, result: T): Promise<T> => {
        if (armed && sql.startsWith('INSERT IGNORE')) {
          armed = false;
          await new Promise((resolve) => setTimeout(resolve, 30));
          taken = (await other.take({ limit: 10, leaseMs: 60_000, receiver })).length;
        }
        return result;
      };
      const client: MysqlQueryable = {
        query: async (sql: string, values?: unknown) => after(sql, await pool.query(sql, values as never)),
        execute: async (sql: string, values?: unknown) =>
          after(sql, await pool.execute(sql, values as never)),
      };
      const accepted = await mysqlStore({ client, table }).inbox.accept(
        {
          key: `${receiver}:evt_1`,
          receiver,
          fingerprint: 'a'.repeat(64),
          body: new TextEncoder().encode('{}'),
          headers: [],
          receivedAt: new Date(),
        },
        { claimMs: 1 },
      );
      assert.equal(taken, 1, 'the worker took the entry between the INSERT and the read back');
      assert.deepEqual(accepted, { status: 'accepted' });
    });
  });

  describe('mysqlStore inbox accept whose claim cannot be read back', () => {
    it('a written entry whose lease read-back fails is accepted (it is durable), handed to the workers at once, and its first run is no takeover (before: the accept failed, 503, and the entry sat claimed by nobody)', async () => {
      const receiver = `readback-${randomBytes(4).toString('hex')}`;
      let failed = 0;
      // The pool, failing the read of the lease's end once (a connection cut after the INSERT).
      const faulty = async <T>(sql: string, run: () => Promise<T>): Promise<T> => {
        if (failed === 0 && sql.startsWith('SELECT due_at')) {
          failed++;
          throw new Error('the connection failed after the INSERT (injected)');
        }
        return run();
      };
      const client: MysqlQueryable = {
        query: (sql: string, values?: unknown) => faulty(sql, () => pool.query(sql, values as never)),
        execute: (sql: string, values?: unknown) => faulty(sql, () => pool.execute(sql, values as never)),
      };
      const inbox = mysqlStore({ client, table }).inbox;
      const accepted = await inbox.accept(
        {
          key: `${receiver}:evt_1`,
          receiver,
          fingerprint: 'a'.repeat(64),
          body: new TextEncoder().encode('{}'),
          headers: [],
          receivedAt: new Date(),
        },
        { claimMs: 60_000 },
      );
      assert.equal(failed, 1, 'the read-back failed');
      assert.deepEqual(accepted, { status: 'accepted' });
      // Due now, not in a minute when the claim would have run out.
      const [job] = await inbox.take({ limit: 10, leaseMs: 60_000, receiver });
      assert.equal(job?.key, `${receiver}:evt_1`);
      assert.equal(job?.takenOver, false, 'its first run is not a takeover');
    });
  });

  describe('mysqlStore inbox on one Connection', () => {
    it('a statement sent while a take transaction is open waits for it: a take rolled back after an accept resolved undid that entry before', async () => {
      const conn = await mysql.createConnection({ uri: servers.mysql });
      after(() => conn.end());
      let fault: (() => Promise<void>) | undefined;
      // The real Connection, whose COMMIT fails once (as a connection cut at that moment would).
      const client: MysqlQueryable = {
        query: async (sql: string, values?: unknown) => {
          const f = fault;
          if (sql === 'COMMIT' && f) {
            fault = undefined;
            await f();
            throw new Error('the connection failed at COMMIT (injected)');
          }
          return conn.query(sql, values as never);
        },
        execute: (sql: string, values?: unknown) => conn.execute(sql, values as never),
      };
      const inbox = mysqlStore({ client, table }).inbox;
      const receiver = `one-conn-${randomBytes(4).toString('hex')}`;
      const input = (key: string): InboxAcceptInput => ({
        key: `${receiver}:${key}`,
        receiver,
        fingerprint: 'a'.repeat(64),
        body: new TextEncoder().encode('{}'),
        headers: [],
        receivedAt: new Date(),
      });
      assert.equal((await inbox.accept(input('first'))).status, 'accepted');
      let late: Promise<InboxAccepted> | undefined;
      fault = async () => {
        // An accept sent while the take's transaction is open on the same Connection.
        late = inbox.accept(input('late'));
        await new Promise((resolve) => setTimeout(resolve, 300));
      };
      await assert.rejects(inbox.take({ limit: 10, leaseMs: 60_000, receiver }), /injected/);
      assert.equal(fault, undefined, 'the fault happened');
      assert.ok(late, 'an accept was sent during the transaction');
      assert.equal((await late).status, 'accepted');
      const other = mysqlStore({ client: pool, table }).inbox;
      assert.equal((await other.get(`${receiver}:late`))?.state, 'pending', 'the accepted entry was kept');
      assert.equal((await other.get(`${receiver}:first`))?.state, 'pending', 'the take was rolled back');
    });
  });
} else {
  await pool.end();
}
