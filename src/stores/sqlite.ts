/**
 * `onceonly/sqlite`: a store over SQLite for a `better-sqlite3` (11 or later) `Database`, a
 * `node:sqlite` `DatabaseSync` (Node 22.16+ and 24) or a `bun:sqlite` `Database`. The store imports
 * no driver: it talks to the database you already opened through the small structural interfaces
 * below, and tells the clients apart by their shape.
 *
 * Safe for several processes on one host sharing one database file: the journal is switched to WAL,
 * every read-modify-write that reads in one statement and writes in another runs in `BEGIN IMMEDIATE`
 * (the write lock is taken before the row is read, so two processes never decide on the same stale
 * row; a single write statement takes the lock itself before reading), and a busy timeout makes a
 * process wait for the lock instead of failing. All time is SQLite's own clock (`julianday('now')`, in ms).
 *
 * All three clients are synchronous: each method does its work before it returns, and returns a settled
 * promise to keep the {@link Store} contract. A method waiting for another process's write lock blocks
 * the event loop for up to the busy timeout.
 */

import type { InboxStore } from '../core/inbox.js';
import type { RecordOptions, Store, StoreAdmin } from '../core/types.js';
import { ConfigError } from '../errors.js';
import { DEFAULT_TABLE, migrationText, sqlStore } from './sql/core.js';
import { type ClientDatabase, clientOf } from './sql/sqlite-clients.js';
import { ddl, sqliteDialect, sqliteInbox, sqliteTables } from './sql/sqlite-dialect.js';
import { isDatabase, isSyncTx, notInTransaction, sqliteDriver } from './sql/sqlite-driver.js';
import { counter, drizzleRaw, type KyselyRawExecutor, kyselyRaw } from './sql/tx.js';
import type { DrizzleSqlTag, PurgeOptions } from './sql.js';
import { inboxDdl } from './sql-inbox.js';

/** What the store needs of a prepared statement of better-sqlite3. */
export interface SqliteStatement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

/** What the store needs of a better-sqlite3 `Database`. */
export interface SqliteDatabase {
  prepare(sql: string): SqliteStatement;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  readonly inTransaction: boolean;
}

/** What the store needs of a prepared statement of node:sqlite (`StatementSync`) or bun:sqlite. */
export interface SqliteSyncStatement {
  run(...params: any[]): { changes: number | bigint };
  all(...params: any[]): unknown[];
}

/** What the store needs of a node:sqlite `DatabaseSync` (Node 22.16+ and 24: `isTransaction`). */
export interface NodeSqliteDatabase {
  prepare(sql: string): SqliteSyncStatement;
  exec(sql: string): void;
  readonly isTransaction: boolean;
}

/** What the store needs of a bun:sqlite `Database`. */
export interface BunSqliteDatabase {
  prepare(sql: string): SqliteSyncStatement;
  query(sql: string): unknown;
  exec(sql: string): unknown;
  readonly inTransaction: boolean;
}

/** A database the store runs on: better-sqlite3's, node:sqlite's or bun:sqlite's. */
export type SqliteClient = SqliteDatabase | NodeSqliteDatabase | BunSqliteDatabase;

/**
 * A transaction `record(key, { tx })` joins: the database inside your transaction
 * (better-sqlite3's `db.transaction(...)`, or `BEGIN` ... `COMMIT` on node:sqlite or bun:sqlite),
 * `drizzleTx(tx, sql)`, or `kyselyTx(trx)`.
 */
export type SqliteTransaction = SqliteClient | SqliteSyncTransaction | SqliteAsyncTransaction;

/** A transaction that runs statements synchronously (Drizzle's over better-sqlite3); made by {@link drizzleTx}. */
export interface SqliteSyncTransaction {
  readonly onceonlySqliteTxSync: (sql: string, params: unknown[]) => readonly unknown[];
}

/** A transaction that runs statements asynchronously (Kysely's); made by {@link kyselyTx}. */
export interface SqliteAsyncTransaction {
  readonly onceonlySqliteTx: (sql: string, params: unknown[]) => Promise<readonly unknown[]>;
}

export interface SqliteStoreOptions {
  /**
   * The database the store runs its statements on: a better-sqlite3 `Database`, a node:sqlite
   * `DatabaseSync` or a bun:sqlite `Database`. The store never closes it.
   * @example sqliteStore({ client: new Database('app.db') })
   * @example sqliteStore({ client: new DatabaseSync('app.db') }) // import { DatabaseSync } from 'node:sqlite'
   */
  client: SqliteClient;
  /**
   * The table of keys, optionally schema-qualified (`main`, or an attached database). The ordering
   * guard's versions live in `<table>_versions`. Plain identifiers only.
   * @default 'onceonly'
   * @example sqliteStore({ client, table: 'webhook_keys' })
   */
  table?: string;
  /**
   * Create the tables on first use (`CREATE TABLE IF NOT EXISTS`). Turn off when your migrations
   * create them from {@link sqliteMigration}.
   * @default true
   * @example sqliteStore({ client, autoCreate: false })
   */
  autoCreate?: boolean;
  /**
   * Switch the database to WAL on first use (`PRAGMA journal_mode = WAL`, which stays set in the file):
   * readers then never block the writer, which is what several processes on one file need. Turn off
   * only if you manage the journal mode yourself.
   * @default true
   * @example sqliteStore({ client, wal: false })
   */
  wal?: boolean;
  /**
   * How long a statement waits for another connection's write lock before failing with SQLITE_BUSY
   * (`PRAGMA busy_timeout`, set on your connection). When not given, a connection's timeout below 5 s is
   * raised to 5 s and a longer one is kept.
   * @default 5000 (better-sqlite3's own default; node:sqlite's is 0)
   * @example sqliteStore({ client, busyTimeout: 10_000 })
   */
  busyTimeout?: number;
}

/** What `purgeExpired()` deletes, and in what batches. */
export type SqlitePurgeOptions = PurgeOptions;

/** A SQLite store: the {@link Store} contract plus housekeeping and a synchronous `record`. */
export interface SqliteStore extends Store, StoreAdmin {
  /**
   * `record()` for use inside `db.transaction(() => ...)`, whose function must be synchronous: the
   * answer comes back at once, so the transaction can skip its writes on a duplicate. With `tx` (the
   * database, inside its transaction: better-sqlite3's `db.transaction`, or `BEGIN` ... `COMMIT` on
   * node:sqlite or bun:sqlite) the dedup row commits or rolls back with your writes.
   *
   * @example
   * db.transaction(() => {
   *   if (store.recordSync(`order:${id}`, { retentionMs, tx: db }).duplicate) return;
   *   insertOrder.run(order);
   * })();
   */
  recordSync(
    key: string,
    options: Omit<RecordOptions, 'tx'> & { tx?: SqliteClient | SqliteSyncTransaction },
  ): { duplicate: boolean };
  /**
   * Deletes completed keys past their retention, and takeable records (released, or their lease ran
   * out) whose lease ended more than their claim's `retentionMs`, or `leaseGraceMs` if longer, ago.
   * Returns how many rows it deleted. Schedule it: see docs/sqlite.md.
   */
  purgeExpired(options?: SqlitePurgeOptions): Promise<number>;
  /**
   * Creates the tables (and switches to WAL) now instead of on first use; with `{ inbox: true }`
   * the inbox's table too (`<table>_inbox`), for receivers in inbox mode.
   */
  ready(options?: { inbox?: boolean }): Promise<void>;
  /** The (quoted) table names the store uses. */
  readonly tables: { readonly keys: string; readonly versions: string };
  /**
   * The inbox for receivers in inbox mode, in `<table>_inbox` of the same database (created on first
   * use unless `autoCreate: false`; see {@link sqliteInboxMigration} and "Inbox" in docs/sqlite.md).
   */
  readonly inbox: InboxStore;
}

/**
 * The SQL that creates the store's tables, for teams whose migrations manage the schema (then pass
 * `autoCreate: false`). Idempotent. `version` is `REAL`, an 8-byte float that holds every JS number
 * exactly. Run `PRAGMA journal_mode = WAL` once on the file as well when several processes share it.
 *
 * @example
 * db.exec(sqliteMigration());
 */
export function sqliteMigration(table: string = DEFAULT_TABLE): string {
  return migrationText(ddl(sqliteTables(table)));
}

/**
 * The SQL that creates the inbox's table `<table>_inbox` and its indexes (for receivers in inbox
 * mode), for teams whose migrations manage the schema. Idempotent.
 *
 * @example
 * db.exec(sqliteInboxMigration());
 */
export function sqliteInboxMigration(table: string = DEFAULT_TABLE): string {
  return migrationText(inboxDdl(sqliteInbox, sqliteDialect(table).inboxNames));
}

/**
 * A store over SQLite for a better-sqlite3 `Database`, a node:sqlite `DatabaseSync` or a bun:sqlite
 * `Database`; `close()` never closes it.
 *
 * @example
 * import { DatabaseSync } from 'node:sqlite'; // Node 22.16+; or: import Database from 'better-sqlite3'
 * const store = sqliteStore({ client: new DatabaseSync('onceonly.db') });
 */
export function sqliteStore(options: SqliteStoreOptions): SqliteStore {
  const db = options?.client;
  const client = clientOf(db);
  if (client === undefined) {
    throw new ConfigError(
      'invalid_option',
      "onceonly: sqliteStore needs { client }: a better-sqlite3 Database (import Database from 'better-sqlite3'), a node:sqlite DatabaseSync on Node 22.16+ (import { DatabaseSync } from 'node:sqlite') or a bun:sqlite Database",
    );
  }
  const table = options.table ?? DEFAULT_TABLE;
  const dialect = sqliteDialect(table);
  const autoCreate = options.autoCreate ?? true;
  const wal = options.wal ?? true;
  const busyTimeout = options.busyTimeout;
  if (busyTimeout !== undefined && (!Number.isInteger(busyTimeout) || busyTimeout < 0)) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: sqliteStore busyTimeout must be a non-negative integer of ms, got ${busyTimeout}`,
    );
  }
  const driver = sqliteDriver({
    db: db as ClientDatabase,
    client,
    table,
    autoCreate,
    wal,
    busyTimeout,
    dialect,
  });
  const { store, record } = sqlStore({ dialect, driver, table, autoCreate });

  function recordSync(
    key: string,
    options: Omit<RecordOptions, 'tx'> & { tx?: SqliteClient | SqliteSyncTransaction },
  ): { duplicate: boolean } {
    const { tx } = options;
    if (tx !== undefined && !isSyncTx(tx) && !isDatabase(tx)) throw notInTransaction();
    // The driver answers synchronously: the answer is there, not a promise of it.
    return record(key, options) as { duplicate: boolean };
  }

  return Object.assign(store, { recordSync });
}

/** What {@link kyselyTx} needs of a Kysely `Transaction` over `SqliteDialect`. */
export interface KyselyExecutor extends KyselyRawExecutor<{ readonly rows: readonly unknown[] }> {}

/**
 * Lets `record(key, { tx })` join a Kysely transaction over `SqliteDialect`: the dedup row commits or
 * rolls back with your writes.
 *
 * @example
 * await db.transaction().execute(async (trx) => {
 *   if ((await store.record(`order:${id}`, { retentionMs, tx: kyselyTx(trx) })).duplicate) return;
 *   await trx.insertInto('orders').values(order).execute();
 * });
 */
export function kyselyTx(trx: KyselyExecutor): SqliteAsyncTransaction {
  const run = kyselyRaw(trx, counter());
  return {
    async onceonlySqliteTx(sql, params) {
      const result = await run(sql, params);
      return result.rows;
    },
  };
}

/**
 * Lets `record(key, { tx })` and `recordSync` join a Drizzle transaction over better-sqlite3
 * (`drizzle-orm/better-sqlite3`). Pass Drizzle's `sql` tag too: the store builds its statement with
 * it and runs it through the transaction's own `all`, synchronously, every value a bound parameter.
 *
 * @example
 * import { sql } from 'drizzle-orm';
 * db.transaction((tx) => {
 *   if (store.recordSync(`order:${id}`, { retentionMs, tx: drizzleTx(tx, sql) }).duplicate) return;
 *   tx.insert(orders).values(order).run();
 * });
 */
export function drizzleTx(tx: { all(query: any): unknown }, sqlTag: DrizzleSqlTag): SqliteSyncTransaction {
  const run = drizzleRaw(
    tx,
    sqlTag,
    'all',
    'db.transaction((tx) => ...) from drizzle-orm/better-sqlite3',
    'question',
  );
  return {
    onceonlySqliteTxSync(text, params) {
      const rows = run(text, params);
      if (!Array.isArray(rows)) {
        throw new ConfigError(
          'invalid_option',
          'onceonly: drizzleTx(tx, sql) needs a synchronous better-sqlite3 transaction (drizzle-orm/better-sqlite3)',
        );
      }
      return rows;
    },
  };
}
