import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import postgres from 'postgres';
import { reachable, servers } from '../../test/support/servers.js';
import { SCHEMA_TABLES, sqlInboxSchemaSpec } from '../../test/support/sql-inbox-schema.js';
import { runInboxConformance } from '../testing/index.js';
import { postgresInboxMigration, postgresStore } from './postgres.js';

// A table of this run (`<table>_inbox`), created by the first inbox, dropped at the end.
const table = `oo_inbox_${randomBytes(4).toString('hex')}`;

const probe = new pg.Pool({ connectionString: servers.postgres, max: 1 });
const up = await reachable('PostgreSQL', servers.postgres, () => probe.query('SELECT 1'));

if (up) {
  const pool = new pg.Pool({ connectionString: servers.postgres, max: 6 });
  const sql = postgres(servers.postgres, { max: 6, onnotice: () => {} });
  after(async () => {
    for (const t of [table, ...SCHEMA_TABLES.map((name) => `${table}_${name}`)])
      await probe.query(`DROP TABLE IF EXISTS ${t}_inbox, ${t}, ${t}_versions`);
    await probe.end();
    await pool.end();
    await sql.end();
  });

  await runInboxConformance({
    name: 'postgresStore inbox conformance (pg Pool)',
    factory: () => postgresStore({ client: pool, table }).inbox,
    runner: { describe, it },
  });
  await runInboxConformance({
    name: 'postgresStore inbox conformance (postgres.js)',
    factory: () => postgresStore({ client: sql, table }).inbox,
    runner: { describe, it },
  });
  sqlInboxSchemaSpec({
    label: 'postgresStore',
    migrationName: 'postgresInboxMigration',
    migration: postgresInboxMigration,
    apply: async (ddl) => void (await pool.query(ddl)),
    inbox: (t, autoCreate) => postgresStore({ client: pool, table: t, autoCreate }).inbox,
    ready: (t, options) => postgresStore({ client: pool, table: t }).ready(options),
    table: (name) => `${table}_${name}`,
    setColumn: async (t, key, column, value) =>
      void (await pool.query(`UPDATE "${t}_inbox" SET ${column} = $1 WHERE entry_key = $2`, [value, key])),
  });

  describe('postgresStore inbox on a big table', () => {
    it('take, purge, stats and list compare due_at with a clock read once, so the index bounds the scan (before, clock_timestamp() was a per-row filter: every idle take read every entry not yet due)', async () => {
      const spy = new pg.Pool({ connectionString: servers.postgres, max: 2 });
      after(() => spy.end());
      const seen: { text: string; values: unknown[] }[] = [];
      const query = spy.query.bind(spy) as (config: { text: string; values?: unknown[] }) => Promise<unknown>;
      (spy as unknown as { query: typeof query }).query = (config) => {
        if (typeof config === 'object' && config !== null && 'text' in config) {
          seen.push({ text: config.text, values: config.values ?? [] });
        }
        return query(config);
      };
      const inbox = postgresStore({ client: spy, table }).inbox;
      const receiver = `big-${randomBytes(4).toString('hex')}`;
      await inbox.take({ limit: 10, leaseMs: 60_000, receiver });
      await inbox.take({ limit: 10, leaseMs: 60_000 });
      await inbox.purge();
      await inbox.stats({ receiver });
      await inbox.list({ receiver, state: 'pending' });
      const statements = seen.filter(
        (s) =>
          /\b(UPDATE|DELETE|SELECT)\b[\s\S]*_inbox"/.test(s.text) && !/to_regclass|CREATE TABLE/.test(s.text),
      );
      assert.ok(
        statements.length >= 5,
        `the inbox statements were seen: ${statements.map((s) => s.text.slice(0, 30)).join(' | ')}`,
      );
      for (const { text, values } of statements) {
        const { rows } = await probe.query(`EXPLAIN ${text}`, values);
        const plan = rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n');
        const perRow = plan.split('\n').filter((line) => /(Filter|Cond):.*clock_timestamp/.test(line));
        assert.deepEqual(perRow, [], `the clock is read per row in:\n${text}\n${plan}`);
      }
    });
  });
} else {
  await probe.end();
}
