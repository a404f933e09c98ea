/**
 * `onceonly/mysql`: a store over MySQL 8 or MariaDB 10.5+ for a `mysql2` promise Pool, PoolConnection or
 * Connection. The store imports no driver: it talks to the client you already have through the small
 * structural interface below.
 *
 * Every state change is one SQL statement, all time is the server's (`UTC_TIMESTAMP(3)`, in ms), and
 * no result depends on how the server counts affected rows: mysql2 turns on `CLIENT_FOUND_ROWS`, which
 * makes `affectedRows` count matched rows, not changed ones. Instead each statement reports what it did
 * through `LAST_INSERT_ID(expr)`, which the server sends back as `insertId` of that very statement.
 */
import type { InboxStore } from '../core/inbox.js';
import type { Store, StoreAdmin } from '../core/types.js';
import { ConfigError } from '../errors.js';
import { DEFAULT_TABLE, migrationText, sqlFaults, sqlStore } from './sql/core.js';
import { ddl, mysqlDialect, mysqlInbox, mysqlTables } from './sql/mysql-dialect.js';
import { isQueryable, mysqlDriver } from './sql/mysql-driver.js';
import { counter, drizzleRaw, type KyselyRawExecutor, kyselyRaw } from './sql/tx.js';
import type { DrizzleSqlTag, PurgeOptions } from './sql.js';
import { inboxDdl } from './sql-inbox.js';

/**
 * What the store needs of a `mysql2/promise` client: `Pool`, `PoolConnection` and `Connection` all fit,
 * and so do the results of {@link kyselyTx} and {@link drizzleTx}.
 */
export interface MysqlQueryable {
  // `any`: mysql2 overloads query() per result type, and every overload must fit.
  query(sql: string, values?: any): Promise<[any, any]>;
  /** Prepared statements (binary protocol); used when present unless `prepare: false`. */
  execute?(sql: string, values?: any): Promise<[any, any]>;
}

/** The transaction `record(key, { tx })` joins: a mysql2 connection inside `BEGIN`, `kyselyTx(trx)` or `drizzleTx(tx, sql)`. */
export type MysqlTransaction = MysqlQueryable;

export interface MysqlStoreOptions {
  /**
   * The client the store runs its statements on: a pool, or a connection used by nothing else (the
   * store's statements must not land inside someone else's open transaction). `close()` never ends it.
   * @example mysqlStore({ client: mysql.createPool('mysql://app@db/app') })
   */
  client: MysqlQueryable;
  /**
   * The table of keys, optionally database-qualified. The ordering guard's versions live in
   * `<table>_versions`. Plain identifiers only (letters, digits, underscores).
   * @default 'onceonly'
   * @example mysqlStore({ client, table: 'billing.webhook_keys' })
   */
  table?: string;
  /**
   * Create the tables on first use (`CREATE TABLE IF NOT EXISTS`). Turn off when your migrations
   * create them from {@link mysqlMigration}, or when the database user may not run DDL.
   * @default true
   * @example mysqlStore({ client, autoCreate: false })
   */
  autoCreate?: boolean;
  /**
   * How many times a statement that lost a deadlock (1213) or waited past `innodb_lock_wait_timeout`
   * (1205) is run again. Both roll back the whole statement, so a retry is safe. Never applies to
   * `record(key, { tx })`: there the server rolled back your transaction and the error is yours.
   * @default 5
   * @example mysqlStore({ client, deadlockRetries: 10 })
   */
  deadlockRetries?: number;
  /**
   * Run the store's statements as server-side prepared statements (`execute`), parsed once per
   * connection, when the client has `execute`. Turn off behind a proxy that does not support the binary
   * protocol's prepared statements.
   * @default true
   * @example mysqlStore({ client, prepare: false })
   */
  prepare?: boolean;
}

/** What `purgeExpired()` deletes, and in what batches. */
export type MysqlPurgeOptions = PurgeOptions;

/** A MySQL store: the {@link Store} contract plus housekeeping. */
export interface MysqlStore extends Store, StoreAdmin {
  /**
   * Deletes completed keys past their retention, and takeable records (released, or their lease ran
   * out) whose lease ended more than their claim's `retentionMs`, or `leaseGraceMs` if longer, ago.
   * Returns how many rows it deleted. Schedule it (cron, the event scheduler, a timer): see
   * docs/mysql.md.
   */
  purgeExpired(options?: MysqlPurgeOptions): Promise<number>;
  /**
   * Creates the tables now instead of on first use (a no-op after the first success); with
   * `{ inbox: true }` the inbox's table too (`<table>_inbox`), for receivers in inbox mode.
   */
  ready(options?: { inbox?: boolean }): Promise<void>;
  /** The (quoted) table names the store uses. */
  readonly tables: { readonly keys: string; readonly versions: string };
  /**
   * The inbox for receivers in inbox mode, in `<table>_inbox` (created on first use unless
   * `autoCreate: false`; see {@link mysqlInboxMigration} and "Inbox" in docs/mysql.md). Needs MySQL
   * 8.0.1+ or MariaDB 10.6+ (`SKIP LOCKED`).
   */
  readonly inbox: InboxStore;
}

/**
 * The SQL that creates the store's tables, for teams whose migrations manage the schema (then pass
 * `autoCreate: false`). Idempotent; statements separated by `;`. Keys are stored in full and indexed by
 * their SHA-256, so keys of any length and any Unicode (emoji included) fit under InnoDB's index limits.
 * `version` is `DOUBLE`, which holds every JS number exactly (counters, timestamps in ms up to 2^53).
 *
 * @example
 * writeFileSync('migrations/20260101_onceonly.sql', mysqlMigration('onceonly'));
 */
export function mysqlMigration(table: string = DEFAULT_TABLE): string {
  return migrationText(ddl(mysqlTables(table)));
}

/**
 * The SQL that creates the inbox's table `<table>_inbox` (for receivers in inbox mode), for teams
 * whose migrations manage the schema. Idempotent.
 *
 * @example
 * writeFileSync('migrations/20260102_onceonly_inbox.sql', mysqlInboxMigration());
 */
export function mysqlInboxMigration(table: string = DEFAULT_TABLE): string {
  return migrationText(inboxDdl(mysqlInbox, mysqlDialect(table).inboxNames));
}

/**
 * A store over MySQL 8 or MariaDB. Takes the mysql2 promise client you already have; `close()` never
 * ends it.
 *
 * @example
 * import mysql from 'mysql2/promise';
 * const store = mysqlStore({ client: mysql.createPool(process.env.DATABASE_URL!) });
 */
export function mysqlStore(options: MysqlStoreOptions): MysqlStore {
  const client = options?.client;
  if (!isQueryable(client)) {
    throw new ConfigError(
      'invalid_option',
      'onceonly: mysqlStore needs { client }: a mysql2/promise Pool or Connection (import mysql from "mysql2/promise")',
    );
  }
  const table = options.table ?? DEFAULT_TABLE;
  const dialect = mysqlDialect(table);
  const autoCreate = options.autoCreate ?? true;
  const retries = options.deadlockRetries ?? 5;
  const prepare = options.prepare ?? true;
  if (!Number.isInteger(retries) || retries < 0) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: mysqlStore deadlockRetries must be a non-negative integer, got ${retries}`,
    );
  }
  const unavailable = sqlFaults(dialect, table, autoCreate);
  const driver = mysqlDriver({ client, table, autoCreate, retries, prepare, dialect, unavailable });
  return sqlStore({ dialect, driver, table, autoCreate }).store;
}

/** What {@link kyselyTx} needs of a Kysely `Transaction` (or `Kysely` instance) over `MysqlDialect`. */
export interface KyselyExecutor
  extends KyselyRawExecutor<{
    readonly rows: readonly unknown[];
    readonly insertId?: bigint;
    readonly numAffectedRows?: bigint;
  }> {}

/**
 * Lets `record(key, { tx })` join a Kysely transaction over `MysqlDialect`: the dedup row commits or
 * rolls back with your writes.
 *
 * @example
 * await db.transaction().execute(async (trx) => {
 *   if ((await store.record(`order:${id}`, { retentionMs, tx: kyselyTx(trx) })).duplicate) return;
 *   await trx.insertInto('orders').values(order).execute();
 * });
 */
export function kyselyTx(trx: KyselyExecutor): MysqlTransaction {
  const run = kyselyRaw(trx, counter());
  return {
    async query(sql: string, values: unknown[] = []) {
      const result = await run(sql, values);
      if (/^\s*select/i.test(sql)) return [result.rows, undefined];
      return [
        { affectedRows: Number(result.numAffectedRows ?? 0n), insertId: Number(result.insertId ?? 0n) },
        undefined,
      ];
    },
  };
}

/**
 * Lets `record(key, { tx })` join a Drizzle transaction over the `mysql2` driver (`drizzle-orm/mysql2`).
 * Pass Drizzle's `sql` tag too: the store builds its statement with it and runs it through the
 * transaction's own `execute`, so every value is a bound parameter and the store imports nothing.
 *
 * @example
 * import { sql } from 'drizzle-orm';
 * await db.transaction(async (tx) => {
 *   if ((await store.record(`order:${id}`, { retentionMs, tx: drizzleTx(tx, sql) })).duplicate) return;
 *   await tx.insert(orders).values(order);
 * });
 */
export function drizzleTx(
  tx: { execute(query: any): PromiseLike<unknown> },
  sql: DrizzleSqlTag,
): MysqlTransaction {
  const run = drizzleRaw(
    tx,
    sql,
    'execute',
    'db.transaction(async (tx) => ...) from drizzle-orm/mysql2',
    'question',
  );
  return {
    async query(text: string, values: unknown[] = []) {
      // drizzle-orm/mysql2 answers with mysql2's own [result, fields].
      const result = await run(text, values);
      return (Array.isArray(result) ? result : [result, undefined]) as [unknown, unknown];
    },
  };
}
