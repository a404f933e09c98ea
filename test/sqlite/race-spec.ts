// The SQLite spec of the multi-process harness (test/support/race.ts): every process opens its own
// connection to one database file in the temp folder; effects are rows of a table in that file.
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteStore } from '../../src/stores/sqlite.js';
import { openSqlite } from '../support/sqlite-client.js';

const fileOf = (runId: string) => join(tmpdir(), `onceonly-race-${runId}.db`);
const effectsDdl = `CREATE TABLE IF NOT EXISTS effects (
  id INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL, attempt INTEGER NOT NULL
)`;

export async function open(runId: string) {
  const db = openSqlite(fileOf(runId), { timeout: 10_000 });
  const store = sqliteStore({ client: db.client, busyTimeout: 10_000 });
  await store.ready();
  db.exec(effectsDdl);
  const insert = db.prepare('INSERT INTO effects (event_id, attempt) VALUES (?, ?)');
  return {
    store,
    async effect(eventId: string, attempt: number) {
      insert.run(eventId, attempt);
    },
    close: async () => {
      db.close();
    },
  };
}

export async function effects(runId: string): Promise<Map<string, number>> {
  const db = openSqlite(fileOf(runId), { timeout: 10_000 });
  try {
    db.exec(effectsDdl);
    const rows = db.prepare('SELECT event_id, COUNT(*) AS n FROM effects GROUP BY event_id').all() as {
      event_id: string;
      n: number;
    }[];
    return new Map(rows.map((r) => [r.event_id, r.n]));
  } finally {
    db.close();
  }
}

export async function cleanup(runId: string): Promise<void> {
  for (const suffix of ['', '-wal', '-shm']) rmSync(fileOf(runId) + suffix, { force: true });
}
