/**
 * PostgreSQL's accepts that go together (`acceptMany`, sql/inbox-writes.ts): plain accepts asked
 * for while one is out go as one multi-row INSERT, each still answered for its own row. On a real
 * server, through a pool whose statements the tests see.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import postgres from 'postgres';
import { reachable, servers } from '../../test/support/servers.js';
import { acceptInput, keyTwiceInOneStatement, statuses } from '../../test/support/accept-many.js';
import type { InboxStore } from '../core/inbox.js';
import { postgresStore } from './postgres.js';

const table = `oo_acc_${randomBytes(4).toString('hex')}`;
const probe = new pg.Pool({ connectionString: servers.postgres, max: 1 });
const up = await reachable('PostgreSQL', servers.postgres, () => probe.query('SELECT 1'));

interface Sent {
  name: string;
  text: string;
  values: number;
  rows: number;
  error?: string;
}

/** A pool whose statements are recorded: name (prepared ones), text, values, rows, error code. */
function watchedPool(): { pool: pg.Pool; sent: Sent[] } {
  const pool = new pg.Pool({ connectionString: servers.postgres, max: 4 });
  const sent: Sent[] = [];
  const query = pool.query.bind(pool) as (config: unknown) => Promise<{ rowCount: number | null }>;
  (pool as unknown as { query: typeof query }).query = async (config) => {
    const name = (config as { name?: string }).name ?? '';
    const text = (config as { text?: string }).text ?? '';
    const values = ((config as { values?: unknown[] }).values ?? []).length;
    try {
      const result = await query(config);
      sent.push({ name, text, values, rows: result.rowCount ?? 0 });
      return result;
    } catch (error) {
      sent.push({ name, text, values, rows: 0, error: String((error as { code?: unknown }).code) });
      throw error;
    }
  };
  return { pool, sent };
}

const input = acceptInput;

/**
 * A third writer's transaction that has inserted `key` and not committed: an accept of the key waits
 * for it. The caller commits or rolls back, then ends it.
 */
async function holdKey(key: string): Promise<pg.Client> {
  const holder = new pg.Client({ connectionString: servers.postgres });
  await holder.connect();
  try {
    await holder.query('BEGIN');
    await holder.query(
      `INSERT INTO ${table}_inbox (entry_key, receiver, state, token, attempts, fingerprint, accepted_at, due_at, updated_at)
VALUES ($1, 'acme', 0, '', 0, $2, 0, 0, 0)`,
      [key, `fp-${key}`],
    );
    return holder;
  } catch (error) {
    await holder.end();
    throw error;
  }
}

if (up) {
  const pools: pg.Pool[] = [];
  const open = () => {
    const watched = watchedPool();
    pools.push(watched.pool);
    return { ...watched, inbox: postgresStore({ client: watched.pool, table }).inbox as InboxStore };
  };
  after(async () => {
    await probe.query(`DROP TABLE IF EXISTS ${table}_inbox, ${table}, ${table}_versions`);
    await probe.end();
    for (const pool of pools) await pool.end();
  });
  // The multi-row INSERTs: their text names what comes back.
  const many = (s: Sent) => s.text.includes('RETURNING entry_key AS k');

  describe('postgresStore inbox: accepts asked for while one is out go as one INSERT', () => {
    it('40 accepts at once: every row written, in fewer statements than accepts, each a multi-row INSERT after the first', async () => {
      const { inbox, sent } = open();
      const run = randomBytes(3).toString('hex');
      const keys = Array.from({ length: 40 }, (_, i) => `many-${run}-${i}`);
      const results = await Promise.all(keys.map((key) => inbox.accept(input(key))));
      assert.deepEqual(
        results.map((r) => r.status),
        keys.map(() => 'accepted'),
      );
      const batches = sent.filter(many);
      assert.ok(batches.length >= 1, 'no multi-row INSERT was sent');
      const inserts = sent.filter((s) => s.name.startsWith('onceonly_inbox_insert_'));
      assert.ok(inserts.length < 40, `${inserts.length} statements for 40 accepts`);
      assert.equal(
        inserts.reduce((n, s) => n + s.rows, 0),
        40,
        'every accept wrote its row once',
      );
      const { rows } = await probe.query(
        `SELECT count(*)::int AS n FROM ${table}_inbox WHERE entry_key LIKE $1`,
        [`many-${run}-%`],
      );
      assert.equal(rows[0].n, 40);
    });

    it('a key given twice in one statement: its first accept writes it, the second is read back as a duplicate (same fingerprint) or a conflict (another)', async () => {
      const { inbox, sent } = open();
      await keyTwiceInOneStatement(inbox, async (a, b) => {
        const { rows } = await probe.query(
          `SELECT entry_key, fingerprint FROM ${table}_inbox WHERE entry_key IN ($1, $2) ORDER BY entry_key`,
          [a, b],
        );
        return rows.map((r) => [r.entry_key, r.fingerprint]);
      });
      const batch = sent.filter(many);
      assert.equal(batch.length, 1, 'the four went as one statement');
      assert.equal(batch[0]!.values, 2 * 13, 'of two rows: each key once');
      assert.equal(batch[0]!.rows, 2);
    });

    it('a row the server refuses fails its own accept only: the statement is sent again one accept at a time', async () => {
      const { inbox, sent } = open();
      const run = randomBytes(3).toString('hex');
      const results = await Promise.allSettled([
        inbox.accept(input(`first-${run}`)),
        inbox.accept(input(`good-1-${run}`)),
        // PostgreSQL refuses a NUL in text: "invalid byte sequence for encoding UTF8: 0x00".
        inbox.accept(input(`bad-${run}`, 'fp\u0000nul')),
        inbox.accept(input(`good-2-${run}`)),
      ]);
      const failed = sent.filter(many).map((s) => s.error);
      assert.deepEqual(failed, ['22021'], 'the multi-row INSERT was refused');
      assert.deepEqual(statuses(results), ['accepted', 'accepted', 'rejected', 'accepted']);
      const { rows } = await probe.query(
        `SELECT entry_key FROM ${table}_inbox WHERE entry_key LIKE $1 ORDER BY 1`,
        [`%-${run}`],
      );
      assert.deepEqual(
        rows.map((r) => r.entry_key),
        [`first-${run}`, `good-1-${run}`, `good-2-${run}`],
      );
    });

    it('a statement waiting for a row lock holds up the accepts asked for after it a quarter second at most, not a store deadline', async () => {
      const { inbox } = open();
      const run = randomBytes(3).toString('hex');
      const held = `held-${run}`;
      await inbox.accept(acceptInput(`made-${run}`)); // the table exists from here
      const holder = await holdKey(held);
      try {
        // The accept of the held key goes alone and waits for the lock; three free keys after it.
        const waiting = inbox.accept(acceptInput(held));
        const started = Date.now();
        const free = await Promise.all([1, 2, 3].map((i) => inbox.accept(acceptInput(`free-${run}-${i}`))));
        const took = Date.now() - started;
        assert.deepEqual(
          free.map((r) => r.status),
          ['accepted', 'accepted', 'accepted'],
        );
        const { rows } = await probe.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%${table}_inbox%'`,
        );
        assert.equal(rows[0].n, 1, 'the held key still waits');
        assert.ok(took < 1_500, `the free keys took ${took} ms (a store deadline is 3,000)`);
        await holder.query('COMMIT');
        assert.equal((await waiting).status, 'duplicate');
      } finally {
        await holder.query('ROLLBACK').catch(() => undefined);
        await holder.end();
      }
    });

    it('postgres.js with `transform: postgres.camel`: new entries still read as accepted (what comes back is named `k`, which the transform keeps)', async () => {
      const sql = postgres(servers.postgres, { max: 2, onnotice: () => {}, transform: postgres.camel });
      try {
        const inbox = postgresStore({ client: sql, table }).inbox as InboxStore;
        const run = randomBytes(3).toString('hex');
        const results = await Promise.all(
          [1, 2, 3, 4].map((i) => inbox.accept(acceptInput(`camel-${run}-${i}`))),
        );
        assert.deepEqual(
          results.map((r) => r.status),
          ['accepted', 'accepted', 'accepted', 'accepted'],
        );
      } finally {
        await sql.end();
      }
    });

    it('batches of every size from 2 to 64 keep a connection under 12 MB of plans: a few padded sizes (6 MB here), not a prepared text per size (41 MB)', async () => {
      const pool = new pg.Pool({ connectionString: servers.postgres, max: 1 });
      pools.push(pool);
      const inbox = postgresStore({ client: pool, table }).inbox as InboxStore;
      const memory = async () => {
        const { rows } = await pool.query(
          'SELECT sum(total_bytes)::bigint AS b FROM pg_backend_memory_contexts',
        );
        return Number(rows[0].b);
      };
      const run = randomBytes(3).toString('hex');
      await inbox.accept(acceptInput(`made-${run}`));
      const before = await memory();
      for (let round = 0; round < 2; round++)
        for (let n = 2; n <= 64; n++)
          await Promise.all(
            Array.from({ length: n + 1 }, (_, i) =>
              inbox.accept(acceptInput(`size-${run}-${round}-${n}-${i}`)),
            ),
          );
      const grew = (await memory()) - before;
      assert.ok(grew < 12 * 1024 * 1024, `the connection grew by ${(grew / 1024 / 1024).toFixed(1)} MB`);
    });

    it('two processes accepting the same keys in opposite orders never deadlock: each statement writes its rows in key order', async () => {
      const one = open();
      const two = open();
      const run = randomBytes(3).toString('hex');
      const [a, m, z] = ['a', 'm', 'z'].map((k) => `order-${run}-${k}`) as [string, string, string];
      await one.inbox.accept(input(`made-${run}`)); // the table exists from here
      // A third writer holds m (inserted, not yet committed): each side's statement writes what
      // comes before m in its order, then waits for it.
      const holder = await holdKey(m);
      try {
        // Each side: a lead accept goes alone, and the three asked for while it is out go as one
        // statement: one side's in the order a, m, z, the other's z, m, a.
        const side = (inbox: InboxStore, order: string[]) =>
          Promise.all([inbox.accept(input(`lead-${order[0]}`)), ...order.map((k) => inbox.accept(input(k)))]);
        const x = side(one.inbox, [a, m, z]);
        const y = side(two.inbox, [z, m, a]);
        // Both statements wait for m: then m is committed, and each goes on past it.
        for (let waiting = 0; waiting < 2; ) {
          await new Promise((resolve) => setTimeout(resolve, 10));
          const { rows } = await probe.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%${table}_inbox%'`,
          );
          waiting = rows[0].n;
        }
        await holder.query('COMMIT');
        const results = [...(await x).slice(1), ...(await y).slice(1)];
        assert.deepEqual(
          results.map((r) => r.status).sort(),
          ['accepted', 'accepted', 'duplicate', 'duplicate', 'duplicate', 'duplicate'],
          'a and z written once each, m by the third writer',
        );
      } finally {
        await holder.query('ROLLBACK').catch(() => undefined);
        await holder.end();
      }
      const statements = [...one.sent, ...two.sent];
      assert.equal(statements.filter(many).length, 2, 'each side sent its three as one statement');
      const deadlocks = statements.filter((s) => s.error === '40P01');
      assert.equal(deadlocks.length, 0, 'a statement ended in a deadlock');
    });
  });
}
