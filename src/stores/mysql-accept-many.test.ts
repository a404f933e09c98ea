/**
 * MySQL's accepts that go together (`acceptMany: 'all-or-nothing'`, sql/inbox-writes.ts): plain
 * accepts asked for while one is out go as one multi-row INSERT IGNORE in a transaction, committed
 * only when it wrote every row, else rolled back and sent again one accept at a time. On a real
 * server (MariaDB here), through a pool whose statements the tests see.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { reachable, servers } from '../../test/support/servers.js';
import { acceptInput, keyTwiceInOneStatement, statuses } from '../../test/support/accept-many.js';
import type { InboxStore } from '../core/inbox.js';
import { type MysqlQueryable, mysqlStore } from './mysql.js';

const table = `oo_acc_${randomBytes(4).toString('hex')}`;
const probe = mysql.createPool({ uri: servers.mysql, connectionLimit: 2 });
const up = await reachable('MySQL', servers.mysql, () => probe.query('SELECT 1'));

interface Sent {
  method: 'query' | 'execute';
  sql: string;
  values: unknown[];
  rows: number;
  errno?: number;
}

type Runner = (sql: string, values?: unknown) => Promise<[unknown, unknown]>;

/** Records each statement a runner sends: its text, the rows it changed, its error number. */
function recording(run: Runner, sent: Sent[], method: Sent['method']): Runner {
  return async (sql, values) => {
    try {
      const result = await run(sql, values);
      sent.push({
        method,
        sql,
        values: Array.isArray(values) ? values : [],
        rows: Number((result[0] as { affectedRows?: number }).affectedRows ?? 0),
      });
      return result;
    } catch (error) {
      sent.push({
        method,
        sql,
        values: Array.isArray(values) ? values : [],
        rows: 0,
        errno: Number((error as { errno?: unknown }).errno),
      });
      throw error;
    }
  };
}

/** A mysql2 pool whose statements, its connections' too, are recorded. */
function watchedPool(): { pool: mysql.Pool; client: MysqlQueryable; sent: Sent[] } {
  const pool = mysql.createPool({ uri: servers.mysql, connectionLimit: 4 });
  const sent: Sent[] = [];
  const client = {
    query: recording(pool.query.bind(pool) as Runner, sent, 'query'),
    execute: recording(pool.execute.bind(pool) as Runner, sent, 'execute'),
    async getConnection() {
      const conn = await pool.getConnection();
      return {
        query: recording(conn.query.bind(conn) as Runner, sent, 'query'),
        execute: recording(conn.execute.bind(conn) as Runner, sent, 'execute'),
        release: () => conn.release(),
      };
    },
  };
  return { pool, client: client as unknown as MysqlQueryable, sent };
}

const input = acceptInput;
/** The multi-row INSERTs, by how many rows each named. */
const many = (sent: Sent[]) =>
  sent.filter((s) => s.sql.startsWith('INSERT IGNORE') && s.sql.includes('),\n('));

if (up) {
  const pools: mysql.Pool[] = [];
  const open = () => {
    const watched = watchedPool();
    pools.push(watched.pool);
    return { ...watched, inbox: mysqlStore({ client: watched.client, table }).inbox as InboxStore };
  };
  after(async () => {
    await probe.query(`DROP TABLE IF EXISTS \`${table}_inbox\``);
    await probe.end();
    for (const pool of pools) await pool.end();
  });

  describe('mysqlStore inbox: accepts asked for while one is out go as one INSERT, all or nothing', () => {
    it('40 accepts at once: every row written, in fewer statements than accepts, committed together', async () => {
      const { inbox, sent } = open();
      await inbox.accept(input(`made-${randomBytes(3).toString('hex')}`)); // the table exists from here
      sent.length = 0;
      const run = randomBytes(3).toString('hex');
      const keys = Array.from({ length: 40 }, (_, i) => `many-${run}-${i}`);
      const results = await Promise.all(keys.map((key) => inbox.accept(input(key))));
      assert.deepEqual(
        results.map((r) => r.status),
        keys.map(() => 'accepted'),
      );
      const inserts = sent.filter((s) => s.sql.startsWith('INSERT IGNORE'));
      assert.ok(many(sent).length >= 1, 'no multi-row INSERT was sent');
      assert.ok(inserts.length < 40, `${inserts.length} statements for 40 accepts`);
      assert.equal(
        inserts.reduce((n, s) => n + s.rows, 0),
        40,
      );
      assert.equal(sent.filter((s) => s.sql === 'ROLLBACK').length, 0);
      // Padded to a few row counts: a prepared text per count would stay on every connection.
      for (const s of many(sent))
        assert.ok(
          [2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64].includes(s.values.length / 13),
          `${s.values.length / 13} rows`,
        );
      const [rows] = await probe.query(
        `SELECT count(*) AS n FROM \`${table}_inbox\` WHERE entry_key LIKE ?`,
        [`many-${run}-%`],
      );
      assert.equal(Number((rows as { n: number }[])[0]!.n), 40);
    });

    it('a key given twice in one statement: its first accept writes it, the second is read back as a duplicate (same fingerprint) or a conflict (another)', async () => {
      const { inbox, sent } = open();
      await inbox.accept(input(`made-${randomBytes(3).toString('hex')}`)); // the table exists from here
      sent.length = 0;
      await keyTwiceInOneStatement(inbox, async (a, b) => {
        const [rows] = await probe.query(
          `SELECT entry_key, fingerprint FROM \`${table}_inbox\` WHERE entry_key IN (?, ?) ORDER BY entry_key`,
          [a, b],
        );
        return (rows as { entry_key: string; fingerprint: string }[]).map((r) => [
          r.entry_key,
          r.fingerprint,
        ]);
      });
      assert.deepEqual(
        many(sent).map((s) => s.rows),
        [2],
        'the four went as one statement of two rows: each key once',
      );
    });

    it('a statement that finds a key already there is rolled back and sent again one accept at a time: each accept answered for its own row', async () => {
      const { inbox, sent } = open();
      const run = randomBytes(3).toString('hex');
      const there = `there-${run}`;
      assert.equal((await inbox.accept(input(there))).status, 'accepted');
      sent.length = 0;
      const results = await Promise.allSettled([
        inbox.accept(input(`alone-${run}`)),
        inbox.accept(input(`new-1-${run}`)),
        inbox.accept(input(there)),
        inbox.accept(input(`new-2-${run}`)),
      ]);
      assert.deepEqual(statuses(results), ['accepted', 'accepted', 'duplicate', 'accepted']);
      assert.deepEqual(
        many(sent).map((s) => s.rows),
        [2],
        'the statement of three wrote two rows',
      );
      assert.equal(sent.filter((s) => s.sql === 'ROLLBACK').length, 1, 'and was rolled back');
      const [rows] = await probe.query(
        `SELECT entry_key FROM \`${table}_inbox\` WHERE entry_key LIKE ? ORDER BY 1`,
        [`%-${run}`],
      );
      assert.deepEqual(
        (rows as { entry_key: string }[]).map((r) => r.entry_key),
        [`alone-${run}`, `new-1-${run}`, `new-2-${run}`, there].sort(),
      );
    });

    it("large deliveries go in several statements of at most 4 MiB: 12 bodies of 1.5 MB together would pass the server's max_allowed_packet (16 MiB), which refuses the statement", async () => {
      const { inbox, sent } = open();
      const run = randomBytes(3).toString('hex');
      await inbox.accept(input(`made-${run}`));
      const [row] = await probe.query('SELECT @@max_allowed_packet AS most');
      const most = Number((row as { most: number }[])[0]!.most);
      const body = Buffer.alloc(1_500_000, 'x');
      assert.ok(
        12 * body.length > most,
        `12 bodies (${12 * body.length} bytes) exceed max_allowed_packet (${most})`,
      );
      sent.length = 0;
      const keys = Array.from({ length: 12 }, (_, i) => `big-${run}-${String(i).padStart(2, '0')}`);
      const results = await Promise.all([
        inbox.accept(input(`lead-${run}`)),
        ...keys.map((key) => inbox.accept({ ...input(key), body })),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ['accepted', ...keys.map(() => 'accepted')],
      );
      assert.deepEqual(
        sent.filter((s) => s.errno !== undefined).map((s) => s.errno),
        [],
        'no statement refused',
      );
      const statements = many(sent);
      assert.ok(statements.length >= 4, `${statements.length} multi-row statements`);
      for (const s of statements) {
        const bytes = s.values.reduce<number>((n, v) => n + (Buffer.isBuffer(v) ? v.length : 0), 0);
        assert.ok(bytes <= 4 * 1024 * 1024, `a statement of ${bytes} bytes of bodies`);
      }
    });

    it('a statement writes its rows in key order, whatever order the accepts came in (so two processes that share keys never deadlock: the PostgreSQL suite provokes one without the order)', async () => {
      const { inbox, sent } = open();
      const run = randomBytes(3).toString('hex');
      const keys = ['z', 'q', 'm', 'e', 'a'].map((k) => `order-${run}-${k}`);
      await inbox.accept(input(`made-${run}`));
      sent.length = 0;
      const [lead, ...rest] = await Promise.all([
        inbox.accept(input(`lead-${run}`)),
        ...keys.map((k) => inbox.accept(input(k))),
      ]);
      assert.deepEqual(
        [lead, ...rest].map((r) => r!.status),
        ['accepted', ...keys.map(() => 'accepted')],
      );
      const [statement] = many(sent);
      assert.ok(statement, 'the five went as one statement');
      const order = keys.map((k) => statement.values.indexOf(k));
      assert.ok(
        order.every((at) => at >= 0),
        'every key is in the statement',
      );
      assert.deepEqual(
        [...keys].sort().map((k) => statement.values.indexOf(k)),
        [...order].sort((x, y) => x - y),
        'the rows in key order',
      );
    });
  });
}
