/**
 * SQLite stores on files of their own, two per file (one process's and another's), in a temporary
 * folder removed after the suite: for the worker suites, where a competing worker shares the inbox.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import type { Store } from '../../src/index.js';
import { sqliteStore } from '../../src/stores/sqlite.js';
import { openSqlite } from './sqlite-client.js';

/** Gives a maker of store pairs: each call a new file, and two stores on it. */
export function sqliteStorePairs(name: string): () => [Store, Store] {
  const dir = mkdtempSync(join(tmpdir(), `onceonly-${name}-`));
  after(() => rmSync(dir, { recursive: true, force: true }));
  let files = 0;
  return () => {
    const file = join(dir, `inbox-${files++}.db`);
    return [
      sqliteStore({ client: openSqlite(file).client }),
      sqliteStore({ client: openSqlite(file).client }),
    ];
  };
}
