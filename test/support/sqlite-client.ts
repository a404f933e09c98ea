/**
 * The SQLite client the suites run the store on: better-sqlite3, or Node's own node:sqlite
 * (`DatabaseSync`) with SQLITE_CLIENT=node. Node 22 and 24 default to node:sqlite (the root's
 * better-sqlite3 is built for the Node line that installed it); Node 20 has no node:sqlite.
 *
 * `openSqlite` gives the client's own database as `client` (what the store is handed, so the store
 * meets the real thing) and, beside it, what the suites do to the file themselves in one form for
 * both: statements, `exec`, pragmas, a transaction, `close`.
 */
import { createRequire } from 'node:module';
import type { SqliteClient } from '../../src/stores/sqlite.js';

const require = createRequire(import.meta.url);

export type SqliteClientName = 'better-sqlite3' | 'node' | 'bun';

function pick(): SqliteClientName {
  const asked = process.env.SQLITE_CLIENT;
  if (asked === 'node' || asked === 'better-sqlite3' || asked === 'bun') return asked;
  if (asked !== undefined && asked !== '') {
    throw new Error(`SQLITE_CLIENT must be node, better-sqlite3 or bun, got ${asked}`);
  }
  if (process.versions.bun !== undefined) return 'bun';
  return Number(process.versions.node.split('.')[0]) >= 22 ? 'node' : 'better-sqlite3';
}

/** The client of this run. */
export const sqliteClientName: SqliteClientName = pick();

export interface TestStatement {
  run(...params: unknown[]): { changes: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

export interface OpenedSqlite {
  /** The client's own database: better-sqlite3's `Database` or node:sqlite's `DatabaseSync`. */
  readonly client: SqliteClient;
  prepare(sql: string): TestStatement;
  exec(sql: string): void;
  /** `PRAGMA name`'s value (the first column of the first row). */
  pragma(name: string): unknown;
  /** Runs `fn` in a transaction (`BEGIN IMMEDIATE` with `immediate`), committed, or rolled back if it throws. */
  transaction<T>(fn: () => T, options?: { immediate?: boolean }): T;
  close(): void;
}

export interface OpenOptions {
  /** The busy timeout in ms (better-sqlite3's `timeout`; set as a pragma on node:sqlite and Bun). @default 5000, better-sqlite3's */
  timeout?: number;
  readonly?: boolean;
}

interface Raw {
  prepare(sql: string): TestStatement;
  exec(sql: string): void;
  close(): void;
}

/**
 * better-sqlite3 from the root install if it has one, else from its on-demand workspace
 * test/better-sqlite3 (the root install leaves that native build out; scripts/test.mjs installs it
 * on Node 20, whose suites use it).
 */
function betterSqlite3(): unknown {
  try {
    return require('better-sqlite3');
  } catch {
    return createRequire(new URL('../better-sqlite3/package.json', import.meta.url))('better-sqlite3');
  }
}

export function openSqlite(file: string, options: OpenOptions = {}): OpenedSqlite {
  let raw: Raw;
  if (sqliteClientName === 'node') {
    const { DatabaseSync } = require('node:sqlite') as {
      DatabaseSync: new (path: string, options?: { readOnly?: boolean }) => Raw;
    };
    raw = new DatabaseSync(file, { readOnly: options.readonly ?? false });
    // better-sqlite3's default busy timeout (5 s), first: node:sqlite's is 0, and the pragma below
    // then failed at once ("database is locked") when four race workers opened one new file together.
    raw.exec(`PRAGMA busy_timeout = ${options.timeout ?? 5_000}`);
    // As better-sqlite3 is built (SQLITE_DEFAULT_WAL_SYNCHRONOUS=1): node:sqlite's connections
    // default to FULL, an fsync at every commit under the write lock, and 4 processes writing flat
    // out then starve a fifth past a 10 s busy timeout (seen in the race suite). docs/sqlite.md says so.
    if (!options.readonly) raw.exec('PRAGMA synchronous = NORMAL');
  } else if (sqliteClientName === 'bun') {
    const { Database } = require('bun:sqlite') as {
      Database: new (path: string, options?: { readonly?: boolean }) => Raw;
    };
    raw = new Database(file, options.readonly ? { readonly: true } : {});
    raw.exec(`PRAGMA busy_timeout = ${options.timeout ?? 5_000}`);
    if (!options.readonly) raw.exec('PRAGMA synchronous = NORMAL');
  } else {
    const Database = betterSqlite3() as new (
      path: string,
      options?: { timeout?: number; readonly?: boolean },
    ) => Raw;
    raw = new Database(file, {
      ...(options.timeout === undefined ? {} : { timeout: options.timeout }),
      readonly: options.readonly ?? false,
    });
  }
  return {
    client: raw as unknown as SqliteClient,
    prepare: (sql) => raw.prepare(sql),
    exec: (sql) => raw.exec(sql),
    pragma(name) {
      const row = raw.prepare(`PRAGMA ${name}`).all()[0] as Record<string, unknown> | undefined;
      return row === undefined ? undefined : Object.values(row)[0];
    },
    transaction(fn, { immediate = false } = {}) {
      raw.exec(immediate ? 'BEGIN IMMEDIATE' : 'BEGIN');
      let result: ReturnType<typeof fn>;
      try {
        result = fn();
      } catch (err) {
        raw.exec('ROLLBACK');
        throw err;
      }
      raw.exec('COMMIT');
      return result;
    },
    close: () => raw.close(),
  };
}
