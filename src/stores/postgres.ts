/**
 * `onceonly/postgres`: a store over PostgreSQL (9.5 or later) for a `pg` Pool, PoolClient or Client,
 * or a `postgres` (postgres.js) instance. The store imports no driver: it talks to the client you
 * already have through the small structural interfaces below.
 *
 * Every state change is one SQL statement, and all time is the server's `clock_timestamp()`.
 */
import type { InboxStore } from '../core/inbox.js';
import type { Store, StoreAdmin } from '../core/types.js';
import { DEFAULT_TABLE, migrationText, sqlFaults, sqlStore } from './sql/core.js';
import { ddl, postgresDialect, postgresInbox, postgresTables } from './sql/postgres-dialect.js';
import { postgresDriver, runnerFor } from './sql/postgres-driver.js';
import { counter, drizzleRaw, kyselyRaw } from './sql/tx.js';
import type { DrizzleSqlTag, PurgeOptions } from './sql.js';
import { inboxDdl } from './sql-inbox.js';

/** A row as both drivers return it. */
type Row = Record<string, unknown>;

/**
 * What the store needs of a `pg` client: `Pool`, `PoolClient` and `Client` all fit.
 * The result of {@link kyselyTx} and {@link drizzleTx} fits too.
 */
export interface PgQueryable {
  query(config: { text: string; values?: unknown[]; name?: string }): Promise<{ rows: Row[] }>;
}

/** What the store needs of a postgres.js `sql` instance (or the transaction `sql` of `sql.begin`). */
export interface PostgresJsSql {
  unsafe(query: string, parameters?: any[], options?: { prepare?: boolean }): PromiseLike<readonly Row[]>;
}

/** A client the store accepts: a `pg` Pool, PoolClient or Client, or a postgres.js `sql`. */
export type PostgresClient = PgQueryable | PostgresJsSql;

/**
 * The transaction `record(key, { tx })` joins: a `pg` PoolClient or Client inside `BEGIN`, the
 * postgres.js `sql` passed to your `sql.begin(...)` callback, `kyselyTx(trx)` or `drizzleTx(tx, sql)`.
 */
export type PostgresTransaction = PostgresClient;

export interface PostgresStoreOptions {
  /**
   * The client the store runs its statements on. The store never ends it: `close()` leaves it open.
   * @example postgresStore({ client: new pg.Pool({ connectionString }) })
   * @example postgresStore({ client: postgres(connectionString) })
   */
  client: PostgresClient;
  /**
   * The table of keys, optionally schema-qualified. The ordering guard's versions live in
   * `<table>_versions`. Plain identifiers only (letters, digits, underscores).
   * @default 'onceonly'
   * @example postgresStore({ client, table: 'billing.webhook_keys' })
   */
  table?: string;
  /**
   * Create the tables on first use when they are missing (`CREATE TABLE IF NOT EXISTS`, serialised
   * between processes by an advisory lock). Existing tables are only looked up, so a role without
   * `CREATE` works once they exist. Turn off when your migrations create them from
   * {@link postgresMigration} and you want a missing table to be an error instead.
   * @default true
   * @example postgresStore({ client, autoCreate: false })
   */
  autoCreate?: boolean;
  /**
   * Use named prepared statements (`pg`) or prepared queries (postgres.js): each statement is parsed
   * once per connection. Turn off behind PgBouncer in transaction mode older than 1.21.
   * postgres.js's own `prepare: false` option also turns it off.
   * @default true
   * @example postgresStore({ client, prepare: false })
   */
  prepare?: boolean;
}

export type { PurgeOptions } from './sql.js';

/** A PostgreSQL store: the {@link Store} contract plus housekeeping. */
export interface PostgresStore extends Store, StoreAdmin {
  /**
   * Deletes completed keys past their retention, and takeable records (released, or their lease ran
   * out) whose lease ended more than their claim's `retentionMs`, or `leaseGraceMs` if longer, ago.
   * Returns how many rows it deleted. Schedule it (cron, pg_cron, a timer): see docs/postgres.md.
   */
  purgeExpired(options?: PurgeOptions): Promise<number>;
  /**
   * Creates the tables now instead of on first use (a no-op after the first success); with
   * `{ inbox: true }` the inbox's table too (`<table>_inbox`), for receivers in inbox mode.
   */
  ready(options?: { inbox?: boolean }): Promise<void>;
  /** The (quoted) table names the store uses. */
  readonly tables: { readonly keys: string; readonly versions: string };
  /**
   * The inbox for receivers in inbox mode, in `<table>_inbox` (created on first use unless
   * `autoCreate: false`; see {@link postgresInboxMigration} and "Inbox" in docs/postgres.md).
   */
  readonly inbox: InboxStore;
}

/**
 * The SQL that creates the store's tables, for teams whose migrations manage the schema (then pass
 * `autoCreate: false`). Idempotent. `version` is `double precision`, which holds every JS number
 * exactly (counters, timestamps in ms up to 2^53).
 *
 * @example
 * // migrations/20260101_onceonly.sql, generated once:
 * writeFileSync('migrations/20260101_onceonly.sql', postgresMigration('onceonly'));
 */
export function postgresMigration(table: string = DEFAULT_TABLE): string {
  return ddl(postgresTables(table));
}

/**
 * The SQL that creates the inbox's table `<table>_inbox` and its indexes (for receivers in inbox
 * mode), for teams whose migrations manage the schema. Idempotent.
 *
 * @example
 * writeFileSync('migrations/20260102_onceonly_inbox.sql', postgresInboxMigration());
 */
export function postgresInboxMigration(table: string = DEFAULT_TABLE): string {
  return migrationText(inboxDdl(postgresInbox, postgresDialect(table).inboxNames), '\n');
}

/**
 * A store over PostgreSQL. Takes the client you already have; `close()` never ends it.
 *
 * @example
 * import pg from 'pg';
 * const store = postgresStore({ client: new pg.Pool({ connectionString: process.env.DATABASE_URL }) });
 *
 * @example
 * import postgres from 'postgres';
 * const store = postgresStore({ client: postgres(process.env.DATABASE_URL!) });
 */
export function postgresStore(options: PostgresStoreOptions): PostgresStore {
  const { client, prepare = true, table = DEFAULT_TABLE, autoCreate = true } = options ?? {};
  const run = runnerFor(client, prepare, 'postgresStore client');
  const dialect = postgresDialect(table);
  const unavailable = sqlFaults(dialect, table, autoCreate);
  const driver = postgresDriver({ client, run, prepare, table, autoCreate, dialect, unavailable });
  return sqlStore({ dialect, driver, table, autoCreate }).store;
}

/**
 * What {@link kyselyTx} needs of a Kysely transaction (or a Kysely instance): `executeQuery` with a
 * compiled query. Kysely's `Transaction<DB>` fits.
 */
export interface KyselyExecutor {
  executeQuery(query: {
    readonly sql: string;
    readonly parameters: ReadonlyArray<unknown>;
    readonly query: any;
    readonly queryId: any;
  }): Promise<{ rows: unknown[] }>;
}

/** Numbers the queries of every kyselyTx (Kysely wants each its own id). */
const kyselyQueries = counter();

/**
 * Lets `record()` join a Kysely transaction (Kysely over `pg` with `PostgresDialect`, or any dialect
 * speaking PostgreSQL).
 *
 * @example
 * await db.transaction().execute(async (trx) => {
 *   const { duplicate } = await store.record(key, { retentionMs, tx: kyselyTx(trx) });
 *   if (!duplicate) await trx.insertInto('orders').values(order).execute();
 * });
 */
export function kyselyTx(trx: KyselyExecutor): PgQueryable {
  const run = kyselyRaw(trx, kyselyQueries);
  return {
    async query({ text, values = [] }) {
      const result = await run(text, values);
      return { rows: result.rows as Row[] };
    },
  };
}

/** What {@link drizzleTx} needs of a Drizzle transaction (node-postgres or postgres-js driver). */
export interface DrizzleExecutor {
  execute(query: any): PromiseLike<unknown>;
}

export type { DrizzleSqlTag };

/**
 * Lets `record()` join a Drizzle transaction. Pass Drizzle's `sql` tag too: the store builds its
 * statement with it, so every value is a bound parameter and the store still imports nothing.
 *
 * @example
 * import { sql } from 'drizzle-orm';
 * await db.transaction(async (tx) => {
 *   const { duplicate } = await store.record(key, { retentionMs, tx: drizzleTx(tx, sql) });
 *   if (!duplicate) await tx.insert(orders).values(order);
 * });
 */
export function drizzleTx(tx: DrizzleExecutor, sql: DrizzleSqlTag): PgQueryable {
  const run = drizzleRaw(tx, sql, 'execute', 'db.transaction(async (tx) => ...) from Drizzle', 'dollar');
  return {
    async query({ text, values = [] }) {
      const result = await run(text, values);
      const rows = Array.isArray(result) ? result : ((result as { rows?: unknown[] }).rows ?? []);
      return { rows: rows as Row[] };
    },
  };
}
