import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sql as drizzleSql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { Kysely, sql as kyselySql, PostgresDialect } from 'kysely';
import pg from 'pg';
import postgres from 'postgres';
import { reachable, servers } from '../../test/support/servers.js';
import { sideBySide } from '../../test/support/side-by-side.js';
import { purgeKeepsRetention } from '../../test/support/sql-retention.js';
import { StoreUnavailableError } from '../errors.js';
import { runConformance } from '../testing/index.js';
import {
  drizzleTx,
  kyselyTx,
  type PgQueryable,
  type PostgresClient,
  type PostgresJsSql,
  type PostgresStore,
  postgresMigration,
  postgresStore,
} from './postgres.js';

const url = servers.postgres;
const run = randomBytes(4).toString('hex');
const pool = new pg.Pool({ connectionString: url, max: 8 });
const sqlJs = postgres(url, { max: 8, onnotice: () => {} });

// Type-level proof that the drivers' own objects fit the structural interfaces.
type Fits<T, U> = T extends U ? true : false;
const typeChecks: [
  Fits<pg.Pool, PgQueryable>,
  Fits<pg.PoolClient, PgQueryable>,
  Fits<pg.Client, PgQueryable>,
  Fits<postgres.Sql, PostgresJsSql>,
  Fits<postgres.TransactionSql, PostgresJsSql>,
] = [true, true, true, true, true];
void typeChecks;

/** Every table this file creates, dropped at the end. */
const tables: string[] = [];
function uniqueTable(label: string): string {
  const name = `oo_test_${label}_${run}`;
  tables.push(name, `${name}_versions`, `${name}_orders`);
  return name;
}

const up = await reachable('PostgreSQL store', url, () => pool.query('SELECT 1'));

async function cleanup(): Promise<void> {
  if (up) for (const t of tables) await pool.query(`DROP TABLE IF EXISTS "${t}"`);
  await pool.end();
  await sqlJs.end();
}

if (!up) await cleanup();
// One enclosing suite, so that its after hook runs once every nested suite (registered across the
// awaits below) has finished.
else
  describe('postgresStore on a real server', async () => {
    after(cleanup);
    const pgTable = uniqueTable('pg');
    const jsTable = uniqueTable('js');
    sideBySide('postgresStore conformance, the clients side by side', (runner) => [
      runConformance({
        name: 'postgresStore conformance (pg Pool)',
        factory: () => postgresStore({ client: pool, table: pgTable }),
        runner,
      }),
      runConformance({
        name: 'postgresStore conformance (postgres.js)',
        factory: () => postgresStore({ client: sqlJs, table: jsTable }),
        runner,
      }),
    ]);

    describe('postgresStore schema', () => {
      it('creates its tables once when several processes use a new table at the same moment', async () => {
        // Prepare: separate connections, like separate processes, all first-using one new table.
        const table = uniqueTable('race');
        const pools = Array.from({ length: 6 }, () => new pg.Pool({ connectionString: url, max: 1 }));
        try {
          // Act
          const results = await Promise.allSettled(
            pools.map((p) => postgresStore({ client: p, table }).record(`k-${run}`, { retentionMs: 60_000 })),
          );
          // Assess
          assert.deepEqual(
            results.map((r) => r.status),
            pools.map(() => 'fulfilled'),
            JSON.stringify(results.filter((r) => r.status === 'rejected')),
          );
          const values = results.map((r) => (r.status === 'fulfilled' ? r.value.duplicate : undefined));
          assert.equal(values.filter((d) => d === false).length, 1);
        } finally {
          await Promise.all(pools.map((p) => p.end()));
        }
      });

      it('emits no "already exists" notice when it creates a missing table next to existing ones', async () => {
        // Prepare: the keys table exists, the versions table does not, so the DDL runs.
        const table = uniqueTable('notice');
        await postgresStore({ client: pool, table }).ready();
        await pool.query(`DROP TABLE "${table}_versions"`);
        const notices: string[] = [];
        const quiet = postgres(url, { max: 1, onnotice: (n) => notices.push(String(n.message)) });
        try {
          // Act
          const store = postgresStore({ client: quiet, table });
          await store.ready();
          // Assess
          assert.deepEqual(notices, []);
          assert.equal(await store.advance('e', 1), true, 'the missing table was created');
        } finally {
          await quiet.end();
        }
      });

      it('exports the DDL as a migration, and autoCreate: false then uses the migrated tables', async () => {
        // Prepare
        const table = uniqueTable('migrated');
        const migration = postgresMigration(table);
        assert.match(migration, /CREATE TABLE IF NOT EXISTS "oo_test_migrated_[0-9a-f]+"/);
        assert.match(migration, /version double precision NOT NULL/);
        const unmigrated = postgresStore({ client: pool, table, autoCreate: false });
        await assert.rejects(unmigrated.record('k', { retentionMs: 1_000 }), (err: unknown) => {
          assert.ok(err instanceof StoreUnavailableError);
          assert.match(err.message, /^onceonly: PostgreSQL store could not record a key \(SQLSTATE 42P01\)/);
          return true;
        });
        // Act
        await pool.query(migration);
        await pool.query(migration);
        // Assess
        assert.deepEqual(await unmigrated.record('k', { retentionMs: 1_000 }), { duplicate: false });
      });

      it('works for a role that may not run DDL once a migration made the tables, with autoCreate left on', async () => {
        // Prepare: a schema where this role may only read and write rows, never create.
        const schema = `oo_limited_${run}`;
        const table = `${schema}.keys`;
        await pool.query(`CREATE SCHEMA ${schema}`);
        await pool.query(postgresMigration(table));
        await pool.query(`CREATE ROLE ${schema} LOGIN`);
        await pool.query(`GRANT USAGE ON SCHEMA ${schema} TO ${schema}`);
        await pool.query(
          `GRANT SELECT, INSERT, UPDATE, DELETE ON ${schema}.keys, ${schema}.keys_versions TO ${schema}`,
        );
        const limited = new pg.Pool({ connectionString: url.replace('postgres@', `${schema}@`), max: 1 });
        try {
          await assert.rejects(limited.query(`CREATE TABLE ${schema}.probe (a int)`), /permission denied/);
          const store = postgresStore({ client: limited, table });
          // Act
          const claim = await store.claim('k', { leaseMs: 60_000 });
          // Assess
          assert.equal(claim.status, 'acquired');
          assert.equal(await store.advance('e', 1), true);
        } finally {
          await limited.end();
          await pool.query(`DROP SCHEMA ${schema} CASCADE`);
          await pool.query(`DROP OWNED BY ${schema}`);
          await pool.query(`DROP ROLE ${schema}`);
        }
      });

      it('accepts a schema-qualified table and refuses names that are not plain identifiers', async () => {
        const table = uniqueTable('schema');
        const store = postgresStore({ client: pool, table: `public.${table}` });
        assert.deepEqual(await store.record('k', { retentionMs: 1_000 }), { duplicate: false });
        assert.equal(store.tables.keys, `"public"."${table}"`);
        for (const bad of ['a b', 'x"; DROP TABLE y; --', 'a.b.c', '', '1abc']) {
          assert.throws(() => postgresStore({ client: pool, table: bad }), /plain identifier/);
        }
        assert.throws(() => postgresStore({ client: {} as PostgresClient }), /pg Pool, PoolClient or Client/);
        assert.throws(() => postgresStore(undefined as never), /pg Pool, PoolClient or Client/);
      });

      it('stores versions up to 2^53 exactly', async () => {
        const store = postgresStore({ client: sqlJs, table: uniqueTable('versions') });
        const entity = `e-${run}`;
        assert.equal(await store.advance(entity, Number.MAX_SAFE_INTEGER - 1), true);
        assert.equal(await store.advance(entity, Number.MAX_SAFE_INTEGER - 1), false);
        assert.equal(await store.advance(entity, Number.MAX_SAFE_INTEGER), true);
        assert.equal(await store.advance(entity, -1), false);
      });
    });

    describe('postgresStore with driver settings and failures', () => {
      it('reads its rows under postgres.js column transforms (postgres.camel) and BigInt int8', async () => {
        // Prepare
        const camel = postgres(url, {
          max: 2,
          onnotice: () => {},
          transform: postgres.camel,
          types: { bigint: postgres.BigInt },
        });
        try {
          const store = postgresStore({ client: camel, table: uniqueTable('camel') });
          // Act
          const claim = await store.claim('k', { leaseMs: 60_000, fingerprint: 'f'.repeat(64) });
          const view = await store.inspect('k');
          // Assess
          assert.equal(claim.status, 'acquired');
          assert.ok(claim.status === 'acquired' && claim.lease.expiresAt.getTime() > Date.now() + 50_000);
          assert.equal(view?.state, 'processing');
          assert.equal(view?.fingerprint, 'f'.repeat(64));
          assert.ok(view && Number.isFinite(view.expiresAt.getTime()) && view.updatedAt instanceof Date);
          assert.equal((await store.claim('k', { leaseMs: 60_000 })).status, 'in-flight');
        } finally {
          await camel.end();
        }
      });

      it('throws StoreUnavailableError, with the driver error as cause, when the server cannot be reached', async () => {
        const dead = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/test', max: 1 });
        try {
          const store = postgresStore({ client: dead, table: uniqueTable('dead') });
          await assert.rejects(store.claim('k', { leaseMs: 1_000 }), (err: unknown) => {
            assert.ok(err instanceof StoreUnavailableError);
            assert.equal(err.code, 'store_unavailable');
            assert.equal(err.status, 503);
            assert.match(
              err.message,
              /^onceonly: PostgreSQL store could not reach the server \(ECONNREFUSED\)/,
            );
            assert.ok(err.cause instanceof Error);
            return true;
          });
          const noCreate = postgresStore({ client: dead, table: 'onceonly', autoCreate: false });
          await assert.rejects(
            noCreate.release({
              key: 'k',
              token: 't',
              attempt: 1,
              fingerprint: undefined,
              expiresAt: new Date(),
            }),
            StoreUnavailableError,
          );
        } finally {
          await dead.end();
        }
      });
    });

    describe('postgresStore.purgeExpired', () => {
      it('deletes completed keys past retention and old takeable leases, and keeps everything else', async () => {
        // Prepare
        const table = uniqueTable('purge');
        const store = postgresStore({ client: pool, table });
        await store.record('completed-expired', { retentionMs: 1 });
        await store.record('completed-live', { retentionMs: 60_000 });
        const live = await store.claim('lease-live', { leaseMs: 60_000 });
        await store.claim('lease-expired', { leaseMs: 1 });
        await new Promise((r) => setTimeout(r, 20));
        // Act: with the default grace the expired lease stays (its attempt must keep counting).
        const first = await store.purgeExpired();
        const second = await store.purgeExpired({ leaseGraceMs: 0, batchSize: 1 });
        // Assess
        assert.equal(first, 1);
        assert.equal(second, 1);
        const { rows } = await pool.query(`SELECT key FROM "${table}" ORDER BY key`);
        assert.deepEqual(
          rows.map((r) => r.key),
          ['completed-live', 'lease-live'],
        );
        assert.equal(live.status, 'acquired');
      });

      it('keeps an expired lease within its grace so a takeover still raises the attempt', async () => {
        const store = postgresStore({ client: sqlJs, table: uniqueTable('grace') });
        await store.claim('k', { leaseMs: 1 });
        await new Promise((r) => setTimeout(r, 20));
        assert.equal(await store.purgeExpired({ leaseGraceMs: 60_000 }), 0);
        const takeover = await store.claim('k', { leaseMs: 60_000 });
        assert.equal(takeover.status === 'acquired' && takeover.lease.attempt, 2);
        await store.record('done', { retentionMs: 1 });
        await new Promise((r) => setTimeout(r, 20));
        assert.equal(await store.purgeExpired({ leaseGraceMs: 0 }), 1, 'postgres.js reports the count too');
      });

      it("keeps a released or run-out row for its claim's retentionMs past leaseGraceMs, then deletes it", async () => {
        const store = postgresStore({ client: pool, table: uniqueTable('retention') });
        await purgeKeepsRetention(store);
      });

      it('forgets versions unused for longer than asked, only when asked', async () => {
        const store = postgresStore({ client: pool, table: uniqueTable('purgev') });
        await store.advance('e', 5);
        await new Promise((r) => setTimeout(r, 20));
        assert.equal(await store.purgeExpired(), 0);
        assert.equal(await store.advance('e', 5), false);
        assert.equal(await store.purgeExpired({ versionsUnusedForMs: 1 }), 1);
        assert.equal(await store.advance('e', 5), true);
      });
    });

    transactionalSuite();
  });

/** One caller transaction kept open until the test decides how it ends. */
interface OpenTx {
  /** What record() is given as `tx`. */
  tx: unknown;
  /** The caller's own write, in the same transaction. */
  write(id: string): Promise<void>;
  end(commit: boolean): Promise<void>;
}

class Rollback extends Error {}

/** Turns a callback-style `transaction(async (tx) => ...)` into an open transaction. */
async function held<T>(
  begin: (body: (tx: T) => Promise<void>) => Promise<unknown>,
  adapt: (tx: T) => Omit<OpenTx, 'end'>,
): Promise<OpenTx> {
  let decide!: (commit: boolean) => void;
  const decision = new Promise<boolean>((resolve) => {
    decide = resolve;
  });
  let opened!: (value: Omit<OpenTx, 'end'>) => void;
  const ready = new Promise<Omit<OpenTx, 'end'>>((resolve) => {
    opened = resolve;
  });
  const done = begin(async (tx) => {
    opened(adapt(tx));
    if (!(await decision)) throw new Rollback();
  }).catch((err) => {
    if (!(err instanceof Rollback)) throw err;
  });
  const parts = await Promise.race([
    ready,
    done.then(() => Promise.reject(new Error('transaction ended early'))),
  ]);
  return {
    ...parts,
    async end(commit) {
      decide(commit);
      await done;
    },
  };
}

function transactionalSuite(): void {
  const table = uniqueTable('tx');
  const orders = `"${table}_orders"`;
  const store: PostgresStore = postgresStore({ client: pool, table });
  const kysely = new Kysely<Record<string, never>>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 4 }) }),
  });
  const db = drizzle(pool);

  describe("record(key, { tx }) in the caller's transaction", () => {
    before(async () => {
      await store.ready();
      await pool.query(`CREATE TABLE IF NOT EXISTS ${orders} (id text PRIMARY KEY)`);
    });
    after(async () => {
      await kysely.destroy();
    });

    const drivers: Record<string, () => Promise<OpenTx>> = {
      'pg PoolClient inside BEGIN': async () => {
        const client = await pool.connect();
        await client.query('BEGIN');
        return {
          tx: client,
          write: async (id) => {
            await client.query(`INSERT INTO ${orders} (id) VALUES ($1)`, [id]);
          },
          async end(commit) {
            try {
              await client.query(commit ? 'COMMIT' : 'ROLLBACK');
            } finally {
              client.release();
            }
          },
        };
      },
      'postgres.js sql.begin': () =>
        held<postgres.TransactionSql>(
          (body) => sqlJs.begin((tx) => body(tx)),
          (tx) => ({
            tx,
            write: async (id) => {
              await tx.unsafe(`INSERT INTO ${orders} (id) VALUES ($1)`, [id]);
            },
          }),
        ),
      'Kysely transaction via kyselyTx': () =>
        held<Parameters<Parameters<ReturnType<typeof kysely.transaction>['execute']>[0]>[0]>(
          (body) => kysely.transaction().execute(body),
          (trx) => ({
            tx: kyselyTx(trx),
            write: async (id) => {
              await kyselySql`INSERT INTO ${kyselySql.raw(orders)} (id) VALUES (${id})`.execute(trx);
            },
          }),
        ),
      'Drizzle transaction via drizzleTx': () =>
        held<Parameters<Parameters<typeof db.transaction>[0]>[0]>(
          (body) => db.transaction(body),
          (tx) => ({
            tx: drizzleTx(tx, drizzleSql),
            write: async (id) => {
              await tx.execute(drizzleSql`INSERT INTO ${drizzleSql.raw(orders)} (id) VALUES (${id})`);
            },
          }),
        ),
    };

    async function orderExists(id: string): Promise<boolean> {
      const { rows } = await pool.query(`SELECT 1 FROM ${orders} WHERE id = $1`, [id]);
      return rows.length === 1;
    }

    /** Waits until some session is blocked on a row lock of the store's table (proof that it waits). */
    async function blockedOnTable(): Promise<void> {
      for (let i = 0; i < 500; i++) {
        const { rows } = await pool.query(
          `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
          [`%INSERT INTO "${table}"%`],
        );
        if (rows.length > 0) return;
        await new Promise((r) => setTimeout(r, 10));
      }
      throw new Error('the second transaction never waited on the first one');
    }

    for (const [label, open] of Object.entries(drivers)) {
      describe(`record() joins the caller's transaction: ${label}`, () => {
        it('commits the dedup row together with the caller’s write', async () => {
          // Prepare
          const key = `commit:${label}:${run}`;
          const t = await open();
          // Act
          const first = await store.record(key, { retentionMs: 60_000, tx: t.tx });
          await t.write(key);
          await t.end(true);
          // Assess
          assert.deepEqual(first, { duplicate: false });
          assert.equal(await orderExists(key), true);
          assert.equal((await store.inspect(key))?.state, 'completed');
          assert.deepEqual(await store.record(key, { retentionMs: 60_000 }), { duplicate: true });
        });

        it('keeps neither on rollback, so the retry is not a duplicate', async () => {
          const key = `rollback:${label}:${run}`;
          const t = await open();
          assert.deepEqual(await store.record(key, { retentionMs: 60_000, tx: t.tx }), { duplicate: false });
          await t.write(key);
          await t.end(false);
          assert.equal(await orderExists(key), false);
          assert.equal(await store.inspect(key), undefined);
          const retry = await open();
          assert.deepEqual(await store.record(key, { retentionMs: 60_000, tx: retry.tx }), {
            duplicate: false,
          });
          await retry.end(true);
        });

        it('makes a concurrent transaction on the same key wait, then see a duplicate after the commit', async () => {
          // Prepare
          const key = `wait-commit:${label}:${run}`;
          const first = await open();
          await store.record(key, { retentionMs: 60_000, tx: first.tx });
          const second = await open();
          // Act
          const pending = store.record(key, { retentionMs: 60_000, tx: second.tx });
          await blockedOnTable();
          await first.end(true);
          const result = await pending;
          await second.end(true);
          // Assess
          assert.deepEqual(result, { duplicate: true });
        });

        it('makes a concurrent transaction wait, then take the key after a rollback', async () => {
          const key = `wait-rollback:${label}:${run}`;
          const first = await open();
          await store.record(key, { retentionMs: 60_000, tx: first.tx });
          const second = await open();
          const pending = store.record(key, { retentionMs: 60_000, tx: second.tx });
          await blockedOnTable();
          await first.end(false);
          const result = await pending;
          await second.write(key);
          await second.end(true);
          assert.deepEqual(result, { duplicate: false });
          assert.equal(await orderExists(key), true);
          assert.equal((await store.inspect(key))?.state, 'completed');
        });
      });
    }

    describe('record() under REPEATABLE READ', () => {
      it("passes the driver's serialization failure through when another transaction committed the key after the snapshot", async () => {
        // Prepare: B's snapshot is taken before A commits the key.
        const key = `rr:${run}`;
        const b = await pool.connect();
        try {
          await b.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
          await b.query('SELECT 1');
          assert.deepEqual(await store.record(key, { retentionMs: 60_000 }), { duplicate: false });
          // Act / Assess
          await assert.rejects(store.record(key, { retentionMs: 60_000, tx: b }), (err: unknown) => {
            assert.equal((err as { code?: string }).code, '40001');
            return true;
          });
        } finally {
          await b.query('ROLLBACK');
          b.release();
        }
      });
    });

    describe('record() tx validation', () => {
      it('refuses a tx that is not a transaction it can run in', async () => {
        await assert.rejects(
          store.record('k', { retentionMs: 1, tx: { nope: true } }),
          /record\(\) tx must be/,
        );
        assert.throws(() => drizzleTx(db, undefined as never), /drizzle-orm/);
        // The db itself is no transaction: the dedup row would commit on its own.
        assert.throws(() => drizzleTx(db, drizzleSql), /not the db itself/);
      });
    });
  });
}
