/**
 * The SQLite spec module for the multi-process inbox race (test/support/inbox-race.ts): every
 * worker opens its own connection to one database file of the run in the temp folder.
 */
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqliteStore } from '../../src/stores/sqlite.js';
import { openSqlite } from '../support/sqlite-client.js';

const fileOf = (runId: string) => join(tmpdir(), `onceonly-${runId}.db`);

export async function open(runId: string) {
  const db = openSqlite(fileOf(runId));
  const store = sqliteStore({ client: db.client, busyTimeout: 10_000 });
  return { inbox: store.inbox, close: async () => void db.close() };
}

export async function cleanup(runId: string): Promise<void> {
  for (const suffix of ['', '-wal', '-shm']) rmSync(fileOf(runId) + suffix, { force: true });
}
