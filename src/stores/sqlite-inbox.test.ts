import { strict as assert } from 'node:assert';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { sqlInboxSchemaSpec } from '../../test/support/sql-inbox-schema.js';
import { openSqlite, sqliteClientName } from '../../test/support/sqlite-client.js';
import { runInboxConformance } from '../testing/index.js';
import { sqliteInboxMigration, sqliteStore } from './sqlite.js';

// A file database (as several processes would share it), two connections to it: the cases that
// ask for a second inbox get one over the other connection.
const file = join(tmpdir(), `onceonly-inbox-${process.pid}-${Date.now()}.db`);
const dbs = [openSqlite(file), openSqlite(file)];
let n = 0;
after(() => {
  for (const db of dbs) db.close();
  for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
});

await runInboxConformance({
  name: `sqliteStore inbox conformance on ${sqliteClientName} (file database, two connections)`,
  factory: () => sqliteStore({ client: dbs[n++ % 2]!.client }).inbox,
});

sqlInboxSchemaSpec({
  label: 'sqliteStore',
  migrationName: 'sqliteInboxMigration',
  migration: sqliteInboxMigration,
  apply: async (ddl) => void dbs[0]!.exec(ddl),
  inbox: (table, autoCreate) => sqliteStore({ client: dbs[0]!.client, table, autoCreate }).inbox,
  ready: (table, options) => sqliteStore({ client: dbs[0]!.client, table }).ready(options),
  table: (name) => `oo_schema_${name}`,
  setColumn: async (t, key, column, value) =>
    void dbs[0]!.prepare(`UPDATE "${t}_inbox" SET ${column} = ? WHERE entry_key = ?`).run(value, key),
});

describe('sqliteStore inbox: a take and a purge re-check the rows they chose by key', () => {
  it('reads the chosen rows by their keys, never every due (or completed) row through the due index', async () => {
    // Prepare: a store whose statements are seen as they are prepared.
    const seen: string[] = [];
    const db = dbs[0]!;
    const client = new Proxy(db.client as object, {
      get(target, name) {
        const value = Reflect.get(target, name);
        if (name === 'prepare')
          return (sql: string) => {
            seen.push(sql);
            return (value as (sql: string) => unknown).call(target, sql);
          };
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as typeof db.client;
    const inbox = sqliteStore({ client, table: `oo_plan_${process.pid}` }).inbox;
    await inbox.accept({
      key: 'plan:1',
      receiver: 'plan',
      fingerprint: 'f'.repeat(64),
      body: new Uint8Array([1]),
      headers: [],
      receivedAt: new Date(),
    });
    const [job] = await inbox.take({ limit: 1, leaseMs: 60_000, receiver: 'plan' });
    await inbox.complete(job!.lease, { retentionMs: 0 });
    await inbox.purge();
    // Act
    const plans = seen
      .filter((sql) =>
        /^WITH due AS[\s\S]*UPDATE|^DELETE FROM[\s\S]*entry_key IN \(\s*SELECT/.test(sql.trim()),
      )
      .map((sql) => {
        const params = (sql.match(/\?/g) ?? []).map(() => null);
        const rows = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[];
        return { sql, plan: rows.map((r) => r.detail).join('\n') };
      });
    // Assess: the take (with and without a receiver: one here) and the purge were seen.
    assert.ok(
      plans.length >= 2,
      `take and purge were prepared: ${seen.map((s) => s.slice(0, 40)).join(' | ')}`,
    );
    for (const { sql, plan } of plans)
      assert.match(plan, /\(entry_key=\?\)/, `the chosen rows are read by key in:\n${sql}\n${plan}`);
  });
});
