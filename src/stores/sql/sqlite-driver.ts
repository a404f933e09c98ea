/**
 * How the SQLite store runs a statement on a client's database (better-sqlite3's `Database`,
 * node:sqlite's `DatabaseSync`, bun:sqlite's `Database`: what differs is in sqlite-clients.ts):
 * synchronously, prepared once per database, under the write lock where the statement asks for it;
 * how it readies the database (busy timeout, WAL, tables) and joins the caller's transactions.
 */

import { ConfigError } from '../../errors.js';
import type { SqlInboxDriver } from '../sql-inbox.js';
import { getOrMake } from './core.js';
import {
  type ClientDatabase,
  type ClientStatement,
  clientOf,
  type SqliteClientKind,
  sqliteCode,
} from './sqlite-clients.js';
import { DEFAULT_BUSY_TIMEOUT, ddl } from './sqlite-dialect.js';
import { upgradeSteps } from './steps.js';
import type { Row, SqlDialect, SqlDriver, SqlOutcome } from './types.js';

/** The caller's transactions (the entry file's `SqliteSyncTransaction` and `SqliteAsyncTransaction`). */
interface SyncTxLike {
  readonly onceonlySqliteTxSync: (sql: string, params: unknown[]) => readonly unknown[];
}
interface AsyncTxLike {
  readonly onceonlySqliteTx: (sql: string, params: unknown[]) => Promise<readonly unknown[]>;
}

/** Whether `value` is a database of one of the clients (sqlite-clients.ts). */
export function isDatabase(value: unknown): value is ClientDatabase {
  return clientOf(value) !== undefined;
}

export function isSyncTx(value: unknown): value is SyncTxLike {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { onceonlySqliteTxSync?: unknown }).onceonlySqliteTxSync === 'function'
  );
}

function isAsyncTx(value: unknown): value is AsyncTxLike {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { onceonlySqliteTx?: unknown }).onceonlySqliteTx === 'function'
  );
}

/** Statement values as every client binds them: no undefined, no booleans. */
const bindable = (values: unknown[]) =>
  values.map((v) => (v === undefined ? null : typeof v === 'boolean' ? Number(v) : v));

/** Prepared statements per database and table, shared by every store object over them. */
const prepared = new WeakMap<object, Map<string, ClientStatement>>();

/** The prepared statements of one database (made once per driver, so a statement is one lookup). */
function preparedOf(db: ClientDatabase): Map<string, ClientStatement> {
  return getOrMake(prepared, db, () => new Map<string, ClientStatement>());
}

function prepare(db: ClientDatabase, sql: string, perDb = preparedOf(db)): ClientStatement {
  let statement = perDb.get(sql);
  if (statement === undefined) {
    statement = db.prepare(sql);
    perDb.set(sql, statement);
  }
  return statement;
}

/** Databases whose tables (per table name) exist already. */
const created = new WeakMap<object, Set<string>>();

/**
 * Runs `fn` holding the write lock: `BEGIN IMMEDIATE` takes it before anything is read (a deferred
 * transaction reading first could find its snapshot stale at the write, which the busy timeout does not
 * cover). Inside a transaction of the caller's, a savepoint instead: the work joins it.
 */
function write<T>(db: ClientDatabase, client: SqliteClientKind, fn: () => T): T {
  const nested = client.inTransaction(db);
  prepare(db, nested ? 'SAVEPOINT onceonly' : 'BEGIN IMMEDIATE').run();
  let result: T;
  try {
    result = fn();
  } catch (err) {
    if (nested) {
      prepare(db, 'ROLLBACK TO onceonly').run();
      prepare(db, 'RELEASE onceonly').run();
    } else if (client.inTransaction(db)) {
      prepare(db, 'ROLLBACK').run();
    }
    throw err;
  }
  prepare(db, nested ? 'RELEASE onceonly' : 'COMMIT').run();
  return result;
}

/** Rows a statement gave back, as the store reads them. */
const rowsBack = (rows: readonly unknown[]): SqlOutcome => ({
  rows: rows as Row[],
  count: rows.length,
  done: rows.length > 0,
  id: 0,
});

/** The error for `record(key, { tx: db })` outside the caller's transaction. */
export function notInTransaction(): ConfigError {
  return new ConfigError(
    'tx_not_in_transaction',
    'onceonly: record() with { tx: db } must be called inside db.transaction(...); outside one the row would not join your writes',
  );
}

export interface SqliteDriverOptions {
  readonly db: ClientDatabase;
  readonly client: SqliteClientKind;
  readonly table: string;
  readonly autoCreate: boolean;
  readonly wal: boolean;
  readonly busyTimeout: number | undefined;
  readonly dialect: SqlDialect;
}

/**
 * Switches a file's database to WAL (an in-memory one has none). The switch needs the file to
 * itself, and SQLite may answer SQLITE_BUSY at once, without waiting out the busy timeout, while
 * other processes open the same new file and switch it too (seen with four at once on a loaded
 * host): tried again every 10 ms, reading the mode each time (another process may have switched
 * it), for up to `waitMs`.
 */
export function toWal(db: ClientDatabase, client: SqliteClientKind, waitMs: number): void {
  const until = Date.now() + waitMs;
  for (;;) {
    try {
      const mode = String(client.pragma(db, 'journal_mode')).toLowerCase();
      if (mode !== 'wal' && mode !== 'memory') client.setPragma(db, 'journal_mode = WAL');
      return;
    } catch (err) {
      if (sqliteCode(err) !== 'SQLITE_BUSY' || Date.now() >= until) throw err;
      Atomics.wait(PAUSE, 0, 0, 10);
    }
  }
}

const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/** The driver of a SQLite store over `db`, a database of `client` (see {@link clientOf}). */
export function sqliteDriver({
  db,
  client,
  table,
  autoCreate,
  wal,
  busyTimeout,
  dialect,
}: SqliteDriverOptions): SqlDriver {
  let isReady = false;

  function ensureReady(): void {
    if (isReady) return;
    const current = Number(client.pragma(db, 'busy_timeout'));
    if (busyTimeout !== undefined) client.setPragma(db, `busy_timeout = ${busyTimeout}`);
    else if (!(current >= DEFAULT_BUSY_TIMEOUT))
      client.setPragma(db, `busy_timeout = ${DEFAULT_BUSY_TIMEOUT}`);
    if (wal && !client.inTransaction(db)) {
      toWal(db, client, busyTimeout ?? Math.max(current, DEFAULT_BUSY_TIMEOUT));
    }
    const done = getOrMake(created, db, () => new Set<string>());
    if (autoCreate && !done.has(table)) {
      write(db, client, () => {
        for (const statement of ddl(dialect.names)) db.prepare(statement).run();
        // A keys table made by an older onceonly has no steps column.
        upgradeSteps(dialect.steps, dialect.errors, dialect.names.keys, (text) => db.prepare(text).run());
      });
      done.add(table);
    }
    isReady = true;
  }

  /** Whether a table is there: looked up, never created ("no such table" is "no", any other error is thrown). */
  function tablePresent(name: string): boolean {
    try {
      db.prepare(`SELECT 1 FROM ${name} LIMIT 0`);
      return true;
    } catch (err) {
      if (/no such table/i.test(String((err as Error | null)?.message))) return false;
      throw err;
    }
  }

  const inbox: SqlInboxDriver = {
    async query(statement, values) {
      ensureReady();
      const prepared = prepare(db, statement.text);
      if (statement.rows) {
        const rows = prepared.all(...bindable(values)) as Record<string, unknown>[];
        return { rows, changes: rows.length };
      }
      return { rows: [], changes: Number(prepared.run(...bindable(values)).changes) };
    },
    async exists() {
      return false;
    },
    async create(statements) {
      ensureReady();
      write(db, client, () => {
        for (const statement of statements) db.prepare(statement).run();
      });
    },
  };

  const statements = preparedOf(db);
  /** One statement, now: on the claim path, so no closure unless it takes the write lock. */
  const runNow = (statement: { text: string; rows?: boolean }, values: unknown[]): SqlOutcome => {
    const prepared = prepare(db, statement.text, statements);
    if (statement.rows) return rowsBack(prepared.all(...values));
    const changes = Number(prepared.run(...values).changes);
    return { rows: [], count: changes, done: changes > 0, id: 0 };
  };
  return {
    client: db,
    run(statement, values) {
      return statement.lock ? write(db, client, () => runNow(statement, values)) : runNow(statement, values);
    },
    locked: (fn) => write(db, client, fn),
    ready: ensureReady,
    joining(tx) {
      if (isSyncTx(tx))
        return (statement, values) => rowsBack(tx.onceonlySqliteTxSync(statement.text, values));
      // Inside the caller's transaction: the row joins it, and their own error handling sees the
      // driver's error unchanged.
      const txClient = clientOf(tx);
      if (txClient !== undefined) {
        const txDb = tx as ClientDatabase;
        if (!txClient.inTransaction(txDb)) throw notInTransaction();
        return (statement, values) => rowsBack(prepare(txDb, statement.text).all(...values));
      }
      if (isAsyncTx(tx)) {
        return async (statement, values) => rowsBack(await tx.onceonlySqliteTx(statement.text, values));
      }
      throw new ConfigError(
        'invalid_option',
        'onceonly: record() tx must be the Database inside its transaction (db.transaction(...), or BEGIN ... COMMIT on a node:sqlite DatabaseSync), drizzleTx(tx, sql) or kyselyTx(trx)',
      );
    },
    health(names) {
      const tables: Record<string, boolean> = {};
      for (const name of names) tables[name] = tablePresent(name);
      return { nowMs: Number.NaN, tables };
    },
    inbox,
  };
}
