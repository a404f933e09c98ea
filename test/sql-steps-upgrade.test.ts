/**
 * Durable steps on tables made by an older onceonly, which have no `steps` column: one spec for the
 * three SQL stores, claims and inbox. With autoCreate off the first statement that needs it (a step;
 * a claim that takes over or confirms) fails with store_missing_table naming the exact ALTER TABLE to
 * run; with autoCreate on the store adds the column on first use and steps work on the rows there. And the SQL
 * stores' life of a released key: remembered (attempt and steps) until purgeExpired forgets it.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { StoreMisconfiguredError } from '../src/core/errors.js';
import type { InboxStore } from '../src/core/inbox.js';
import { createLease } from '../src/core/lease.js';
import type { StepStore } from '../src/core/steps.js';
import type { Claim, Lease, Store } from '../src/core/types.js';
import { mysqlInboxMigration, mysqlMigration, mysqlStore } from '../src/stores/mysql.js';
import { postgresInboxMigration, postgresMigration, postgresStore } from '../src/stores/postgres.js';
import type { PurgeOptions } from '../src/stores/sql.js';
import { sqliteInboxMigration, sqliteMigration, sqliteStore } from '../src/stores/sqlite.js';
import { reachable, servers } from './support/servers.js';
import { openSqlite } from './support/sqlite-client.js';

type SqlStore = Store & {
  readonly inbox: InboxStore;
  purgeExpired(options?: PurgeOptions): Promise<number>;
};

interface Spec {
  label: string;
  /** Runs SQL text of one or more statements. */
  exec(sql: string): Promise<void>;
  quote(name: string): string;
  migrations(table: string): string[];
  store(table: string, autoCreate: boolean): SqlStore;
}

const run = randomBytes(4).toString('hex');
const LONG = 60_000;

const acquired = (claim: Claim): Lease => {
  assert.equal(claim.status, 'acquired');
  return (claim as { lease: Lease }).lease;
};

const entry = (key: string) => ({
  key,
  receiver: 'steps',
  fingerprint: 'f'.repeat(64),
  body: new Uint8Array([1, 2, 3]),
  headers: [['content-type', 'application/json']] as [string, string][],
  receivedAt: new Date(),
});

const asObject = (m: ReadonlyMap<string, string>) => Object.fromEntries(m);

/** The error of a step on a table without the column: store_missing_table, naming the ALTER. */
function missingColumn(alterTable: string) {
  const escaped = `ALTER TABLE ${alterTable} ADD COLUMN steps `.replace(/[.*+?^${}()|[\]\\`]/g, '\\$&');
  return (err: unknown) => {
    assert.ok(err instanceof StoreMisconfiguredError, String(err));
    assert.equal(err.code, 'store_missing_table');
    assert.match(err.message, new RegExp(escaped));
    assert.match(err.message, /older onceonly/);
    return true;
  };
}

/** The lease of the one entry of `inbox` accepted and taken now. */
async function takenEntry(inbox: InboxStore, key: string): Promise<Lease> {
  assert.equal((await inbox.accept(entry(key))).status, 'accepted');
  const [job] = await inbox.take({ limit: 1, leaseMs: LONG, receiver: 'steps' });
  assert.ok(job);
  return job.lease;
}

function spec(s: Spec): void {
  describe(`${s.label}: durable steps on tables of an older onceonly (no steps column)`, () => {
    it('autoCreate off: the first statement that needs the column fails naming the ALTER; autoCreate on adds it on first use, once', async () => {
      const table = `oo_steps_old_${run}`;
      for (const sql of s.migrations(table)) await s.exec(sql);
      await s.exec(`ALTER TABLE ${s.quote(table)} DROP COLUMN steps`);
      await s.exec(`ALTER TABLE ${s.quote(`${table}_inbox`)} DROP COLUMN steps`);

      const off = s.store(table, false);
      // A lease of a row an older onceonly wrote, taken over by this version's steps.
      const old = createLease({
        key: 'order:1',
        token: 'a'.repeat(32),
        attempt: 2,
        fingerprint: undefined,
        expiresAt: new Date(Date.now() + LONG),
      });
      await assert.rejects(
        (off.steps as StepStore).save(old, 'charge', '"pi_1"'),
        missingColumn(s.quote(table)),
      );
      await assert.rejects((off.steps as StepStore).load(old), missingColumn(s.quote(table)));
      // The inbox accepts and takes as before; its steps name the inbox table's ALTER.
      const job = await takenEntry(off.inbox, 'order:2');
      const inboxSteps = off.inbox.steps as StepStore;
      const inboxTable = s.quote(`${table}_inbox`);
      await assert.rejects(inboxSteps.save(job, 'charge', '"pi_2"'), missingColumn(inboxTable));
      await assert.rejects(inboxSteps.load(job), missingColumn(inboxTable));

      const on = s.store(table, true);
      const steps = on.steps as StepStore;
      const lease = acquired(await on.claim('order:1', { leaseMs: LONG }));
      assert.equal(await steps.save(lease, 'charge', '"pi_1"'), true);
      assert.deepEqual(asObject(await steps.load(lease)), { charge: '"pi_1"' });
      assert.equal(await (on.inbox.steps as StepStore).save(job, 'charge', '"pi_2"'), true);
      assert.deepEqual(asObject(await inboxSteps.load(job)), { charge: '"pi_2"' });
      // The column is there for the store without autoCreate too; another start alters nothing.
      assert.deepEqual(asObject(await (off.steps as StepStore).load(lease)), { charge: '"pi_1"' });
      const again = s.store(table, true);
      assert.equal(await (again.steps as StepStore).save(lease, 'email', '1'), true);
      assert.equal(await again.confirm(lease, { retentionMs: LONG }), true);
      assert.deepEqual(asObject(await steps.load(lease)), {});
      assert.equal(await on.inbox.complete(job, { retentionMs: LONG }), true);
      assert.deepEqual(asObject(await inboxSteps.load(job)), {});
    });

    it('a released key past its retention keeps its attempt and steps until purgeExpired forgets it: then attempt 1, none', async () => {
      const table = `oo_steps_life_${run}`;
      const store = s.store(table, true);
      const steps = store.steps as StepStore;
      const first = acquired(await store.claim('order:3', { leaseMs: LONG, retentionMs: 1 }));
      assert.equal(await steps.save(first, 'charge', '"pi_3"'), true);
      assert.equal(await store.release(first), true);
      await new Promise((resolve) => setTimeout(resolve, 20));
      const second = acquired(await store.claim('order:3', { leaseMs: LONG, retentionMs: 1 }));
      assert.equal(second.attempt, 2);
      assert.deepEqual(asObject(await steps.load(second)), { charge: '"pi_3"' });
      assert.equal(await store.release(second), true);
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.ok((await store.purgeExpired({ leaseGraceMs: 0 })) >= 1);
      const fresh = acquired(await store.claim('order:3', { leaseMs: LONG }));
      assert.equal(fresh.attempt, 1);
      assert.deepEqual(asObject(await steps.load(fresh)), {});
    });
  });
}

// SQLite: in process, always there.
{
  const db = openSqlite(':memory:');
  after(() => db.close());
  spec({
    label: 'sqliteStore',
    exec: async (sql) => void db.exec(sql),
    quote: (name) => `"${name}"`,
    migrations: (table) => [sqliteMigration(table), sqliteInboxMigration(table)],
    store: (table, autoCreate) => sqliteStore({ client: db.client, table, autoCreate }),
  });
}

const pgUp = await reachable('PostgreSQL', servers.postgres, async () => {
  const c = new pg.Client({ connectionString: servers.postgres });
  await c.connect();
  await c.end();
});
if (pgUp) {
  const pool = new pg.Pool({ connectionString: servers.postgres, max: 4 });
  after(async () => {
    for (const t of [`oo_steps_old_${run}`, `oo_steps_life_${run}`])
      await pool.query(`DROP TABLE IF EXISTS "${t}", "${t}_versions", "${t}_inbox"`);
    await pool.end();
  });
  spec({
    label: 'postgresStore',
    exec: async (sql) => void (await pool.query(sql)),
    quote: (name) => `"${name}"`,
    migrations: (table) => [postgresMigration(table), postgresInboxMigration(table)],
    store: (table, autoCreate) => postgresStore({ client: pool, table, autoCreate }),
  });
}

const mysqlUp = await reachable('MySQL/MariaDB', servers.mysql, async () => {
  const c = await mysql.createConnection(servers.mysql);
  await c.end();
});
if (mysqlUp) {
  const pool = mysql.createPool({ uri: servers.mysql, connectionLimit: 4, multipleStatements: true });
  after(async () => {
    for (const t of [`oo_steps_old_${run}`, `oo_steps_life_${run}`])
      await pool.query(`DROP TABLE IF EXISTS \`${t}\`, \`${t}_versions\`, \`${t}_inbox\``);
    await pool.end();
  });
  spec({
    label: 'mysqlStore',
    exec: async (sql) => void (await pool.query(sql)),
    quote: (name) => `\`${name}\``,
    migrations: (table) => [mysqlMigration(table), mysqlInboxMigration(table)],
    store: (table, autoCreate) => mysqlStore({ client: pool, table, autoCreate }),
  });
}
