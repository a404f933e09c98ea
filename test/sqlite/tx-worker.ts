// A separate process holding a write transaction with a dedup row in it, for test/sqlite/tx.test.ts.
import Database from 'better-sqlite3';
import { sqliteStore } from '../../src/stores/sqlite.js';

const { file, key, ending, holdMs } = JSON.parse(process.env.TX_WORKER!) as {
  file: string;
  key: string;
  ending: string;
  holdMs: number;
};
const db = new Database(file);
const store = sqliteStore({ client: db });
await store.ready();
db.prepare('BEGIN IMMEDIATE').run();
const { duplicate } = store.recordSync(key, { retentionMs: 60_000, tx: db });
process.send!({ holding: true, duplicate });
setTimeout(() => {
  // When the transaction began to end: a transaction that waited for it finishes after this.
  const endingAt = Date.now();
  db.prepare(ending === 'commit' ? 'COMMIT' : 'ROLLBACK').run();
  db.close();
  process.send!({ endingAt }, () => process.disconnect());
}, holdMs);
