import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
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
  table: (name) => `oo_schema_${name}`,
  setColumn: async (t, key, column, value) =>
    void dbs[0]!.prepare(`UPDATE "${t}_inbox" SET ${column} = ? WHERE entry_key = ?`).run(value, key),
});
