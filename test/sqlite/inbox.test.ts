// A receiver in inbox mode over sqliteStore, on a database file (test/support/inbox-receiver.ts).
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { sqliteStore } from '../../src/stores/sqlite.js';
import { inboxReceiverSpec } from '../support/inbox-receiver.js';
import { openSqlite } from '../support/sqlite-client.js';
import { stepsSpec } from '../support/steps-spec.js';

const file = join(tmpdir(), `onceonly-inbox-rcv-${process.pid}-${Date.now()}.db`);
const db = openSqlite(file);
after(() => {
  db.close();
  for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
});

inboxReceiverSpec('sqliteStore', (name) => sqliteStore({ client: db.client, table: `oo_${name}` }));
stepsSpec('sqliteStore', (name) => sqliteStore({ client: db.client, table: `oo_${name}` }));
