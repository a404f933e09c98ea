/**
 * `onceonly/sqlite`: a store over SQLite for a `better-sqlite3` (11 or later) `Database`. The store
 * imports no driver: it talks to the database you already opened through the small structural
 * interface below.
 *
 * Safe for several processes on one host sharing one database file: the journal is switched to WAL,
 * every read-modify-write that reads in one statement and writes in another runs in `BEGIN IMMEDIATE`
 * (the write lock is taken before the row is read, so two processes never decide on the same stale
 * row; a single write statement takes the lock itself before reading), and a busy timeout makes a
 * process wait for the lock instead of failing. All time is SQLite's own clock (`julianday('now')`, in ms).
 *
 * better-sqlite3 is synchronous: each method does its work before it returns, and returns a settled
 * promise to keep the {@link Store} contract. A method waiting for another process's write lock blocks
 * the event loop for up to the busy timeout.
 */

import { newToken } from '../core/crypto.js';
import type { HealthScope, StoreHealth } from '../core/health.js';
import type { InboxStore } from '../core/inbox.js';
import { storeKey } from '../core/keys.js';
import {
  assertVersion,
  type Claim,
  type ClaimOptions,
  createLease,
  type Lease,
  markBuiltin,
  type RecordOptions,
  type RecordView,
  type Store,
  type StoreAdmin,
  type StoreStats,
  sameFingerprint,
} from '../core/types.js';
import { ConfigError } from '../errors.js';
import {
  type DrizzleSqlTag,
  drizzleStatement,
  outdatedTableFix,
  type PurgeOptions,
  purgeSettings,
  requireDrizzleTx,
  type SqlErrorDialect,
  sqlHealth,
  sqlStoreError,
  type TableNames,
  tableNames,
} from './sql.js';
import { inboxDdl, inboxNames, type SqlInboxDialect, sqlInbox } from './sql-inbox.js';

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

/**
 * A transaction `record(key, { tx })` joins: the better-sqlite3 `Database` inside your
 * `db.transaction(...)`, `drizzleTx(tx, sql)`, or `kyselyTx(trx)`.
 */
export type SqliteTransaction = SqliteDatabase | SqliteSyncTransaction | SqliteAsyncTransaction;

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
   * The better-sqlite3 database the store runs its statements on. The store never closes it.
   * @example sqliteStore({ client: new Database('app.db') })
   */
  client: SqliteDatabase;
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
   * @default 5000 (better-sqlite3's own default)
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
   * database, inside its transaction) the dedup row commits or rolls back with your writes.
   *
   * @example
   * db.transaction(() => {
   *   if (store.recordSync(`order:${id}`, { retentionMs, tx: db }).duplicate) return;
   *   insertOrder.run(order);
   * })();
   */
  recordSync(
    key: string,
    options: Omit<RecordOptions, 'tx'> & { tx?: SqliteDatabase | SqliteSyncTransaction },
  ): { duplicate: boolean };
  /**
   * Deletes completed keys past their retention, and takeable records (released, or their lease ran
   * out) whose lease ended more than their claim's `retentionMs`, or `leaseGraceMs` if longer, ago.
   * Returns how many rows it deleted. Schedule it: see docs/sqlite.md.
   */
  purgeExpired(options?: SqlitePurgeOptions): Promise<number>;
  /** Creates the tables (and switches to WAL) now instead of on first use. */
  ready(): Promise<void>;
  /** The (quoted) table names the store uses. */
  readonly tables: { readonly keys: string; readonly versions: string };
  /**
   * The inbox for receivers in inbox mode, in `<table>_inbox` of the same database (created on first
   * use unless `autoCreate: false`; see {@link sqliteInboxMigration} and "Inbox" in docs/sqlite.md).
   */
  readonly inbox: InboxStore;
}

const DEFAULT_TABLE = 'onceonly';
const DEFAULT_BUSY_TIMEOUT = 5_000;

function sqliteTables(table: string): TableNames {
  return tableNames(table, {
    store: 'sqliteStore',
    qualifier: 'schema',
    quote: '"',
    maxLength: 100,
    indexInSchema: true,
  });
}

function ddl(t: TableNames): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${t.keys} (
  key TEXT NOT NULL PRIMARY KEY,
  state INTEGER NOT NULL, -- 0 processing, 1 completed
  token TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  fingerprint TEXT,
  expires_at INTEGER NOT NULL, -- ms since the epoch, SQLite's clock
  updated_at INTEGER NOT NULL,
  grace_ms INTEGER NOT NULL DEFAULT 0 -- ms a released or run-out row is kept past expires_at
) WITHOUT ROWID`,
    `CREATE INDEX IF NOT EXISTS ${t.index} ON ${t.bareKeys} (expires_at)`,
    `CREATE TABLE IF NOT EXISTS ${t.versions} (
  entity TEXT NOT NULL PRIMARY KEY,
  version REAL NOT NULL,
  updated_at INTEGER NOT NULL
) WITHOUT ROWID`,
  ];
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
  return `${ddl(sqliteTables(table)).join(';\n\n')};\n`;
}

/**
 * The SQL that creates the inbox's table `<table>_inbox` and its indexes (for receivers in inbox
 * mode), for teams whose migrations manage the schema. Idempotent.
 *
 * @example
 * db.exec(sqliteInboxMigration());
 */
export function sqliteInboxMigration(table: string = DEFAULT_TABLE): string {
  sqliteTables(table);
  return `${inboxDdl(sqliteInbox, inboxNames(table, '"', true)).join(';\n\n')};\n`;
}

/**
 * SQLite's clock in ms since the epoch. `julianday('now')` works on every SQLite version (unlike
 * `unixepoch('subsec')`, 3.42+) and is fixed for the duration of one statement; its double has about
 * 0.05 ms of resolution, so rounding gives the exact millisecond SQLite holds internally.
 */
const NOW = "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)";

function statements(t: TableNames) {
  const cols = '(key, state, token, attempt, fingerprint, expires_at, updated_at, grace_ms)';
  return {
    // A key nobody holds: one statement, atomic on its own (an autocommit write takes the write lock
    // before it reads). No row back when the key exists; then claim() decides under BEGIN IMMEDIATE.
    insert: `INSERT INTO ${t.keys} ${cols} VALUES (?, 0, ?, 1, ?, ${NOW} + ?, ${NOW}, ?)
ON CONFLICT (key) DO NOTHING
RETURNING expires_at`,
    // The owner's confirm, the usual case: one statement. No change when the row is not ours.
    confirmOwn: `UPDATE ${t.keys} SET state = 1, expires_at = ${NOW} + ?, updated_at = ${NOW}
WHERE key = ? AND token = ?`,
    found: `SELECT state, token, attempt, fingerprint, expires_at, ${NOW} AS now_ms FROM ${t.keys} WHERE key = ?`,
    put: `INSERT OR REPLACE INTO ${t.keys} ${cols} VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    // Released: no owner (empty token), the lease ends now; attempt, fingerprint and grace stay.
    release: `UPDATE ${t.keys} SET token = '', expires_at = ${NOW}, updated_at = ${NOW}
WHERE key = ? AND token = ? AND state = 0`,
    extend: `UPDATE ${t.keys} SET expires_at = ${NOW} + ?, updated_at = ${NOW} WHERE key = ? AND token = ? AND state = 0`,
    // One statement, so it also runs through an asynchronous transaction (Kysely). A row comes back
    // only when it was inserted or when it took over a key that was released or ran out (a processing
    // row of another fingerprint keeps it); UPDATE SET reads the old row.
    record: `INSERT INTO ${t.keys} AS r ${cols} VALUES (?, 1, ?, 1, ?, ${NOW} + ?, ${NOW}, 0)
ON CONFLICT (key) DO UPDATE SET
  state = 1,
  token = excluded.token,
  attempt = CASE WHEN r.state = 0 THEN r.attempt + 1 ELSE 1 END,
  fingerprint = excluded.fingerprint,
  expires_at = excluded.expires_at,
  updated_at = excluded.updated_at
WHERE (r.expires_at <= excluded.updated_at OR r.token = '')
  AND (r.state = 1 OR r.fingerprint IS NULL OR excluded.fingerprint IS NULL OR r.fingerprint = excluded.fingerprint)
RETURNING 1 AS ok`,
    advance: `INSERT INTO ${t.versions} AS v (entity, version, updated_at) VALUES (?, ?, ${NOW})
ON CONFLICT (entity) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at
WHERE v.version < excluded.version
RETURNING 1 AS ok`,
    stats: `SELECT
  COALESCE(SUM(state = 0 AND expires_at > n.ms AND token <> ''), 0) AS processing,
  COALESCE(SUM(state = 0 AND (expires_at <= n.ms OR token = '')), 0) AS takeable,
  COALESCE(SUM(state = 1 AND expires_at > n.ms), 0) AS completed
FROM ${t.keys}, (SELECT ${NOW} AS ms) AS n`,
    oldest: `SELECT key, state, token = '' AS released, attempt, fingerprint, expires_at, updated_at FROM ${t.keys}
WHERE state = 0 ORDER BY expires_at LIMIT ?`,
    inspect: `SELECT state, token = '' AS released, attempt, fingerprint, expires_at, updated_at FROM ${t.keys}
WHERE key = ? AND (state = 0 OR expires_at > ${NOW})`,
    // A takeable row (released, or its lease ran out) stays for its claim's retention (grace_ms) or
    // the purge's leaseGraceMs past its lease's end, whichever is longer.
    purge: `DELETE FROM ${t.keys} WHERE key IN (
  SELECT key FROM ${t.keys}
  WHERE expires_at <= ${NOW} AND (state = 1 OR expires_at + MAX(grace_ms, ?) <= ${NOW}) LIMIT ?
)`,
    purgeVersions: `DELETE FROM ${t.versions} WHERE entity IN (
  SELECT entity FROM ${t.versions} WHERE updated_at <= ${NOW} - ? LIMIT ?
)`,
  } as const;
}

type StatementName = keyof ReturnType<typeof statements>;

interface FoundRow {
  state: number;
  token: string;
  attempt: number;
  fingerprint: string | null;
  expires_at: number;
  now_ms: number;
}

interface ViewRow {
  state: number;
  /** 1 when a processing row has no owner (released). */
  released: number;
  attempt: number;
  fingerprint: string | null;
  expires_at: number;
  updated_at: number;
}

function isDatabase(value: unknown): value is SqliteDatabase {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { prepare?: unknown }).prepare === 'function' &&
    typeof (value as { inTransaction?: unknown }).inTransaction === 'boolean'
  );
}

function isSyncTx(value: unknown): value is SqliteSyncTransaction {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { onceonlySqliteTxSync?: unknown }).onceonlySqliteTxSync === 'function'
  );
}

function isAsyncTx(value: unknown): value is SqliteAsyncTransaction {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { onceonlySqliteTx?: unknown }).onceonlySqliteTx === 'function'
  );
}

/**
 * What the store makes of SQLite's result codes: the ones that mean a misconfiguration (a read-only
 * file, a missing table, a file that cannot be opened), and the write lock held too long. Any other
 * is an error that may pass. `no such table` and `unknown database` are plain SQLITE_ERROR, told
 * apart by their message.
 */
const sqliteErrors: SqlErrorDialect = {
  store: 'SQLite',
  migration: 'sqliteMigration',
  key(err) {
    const code = (err as { code?: unknown } | null)?.code;
    return typeof code === 'string' && code.startsWith('SQLITE_') ? code : undefined;
  },
  shown(err) {
    const code = (err as { code?: unknown } | null)?.code;
    return typeof code === 'string' ? code : undefined;
  },
  codeless: 'transient',
  rules: [
    {
      code: 'SQLITE_READONLY_DBMOVED',
      fault: 'store_unknown_database',
      fix: 'the database file was moved or deleted after it was opened: open it again where it is now',
    },
    // Another connection is recovering the WAL, or the shared-memory lock is briefly unavailable:
    // a passing state, not a read-only database.
    { code: /^SQLITE_READONLY_(RECOVERY|CANTLOCK)$/, fault: 'transient' },
    { code: /^SQLITE_(READONLY|PERM|AUTH)/, fault: 'store_permission_denied' },
    { code: /^SQLITE_CANTOPEN/, fault: 'store_unknown_database' },
    {
      code: 'SQLITE_NOTADB',
      fault: 'store_unknown_database',
      fix: 'the file is not a SQLite database (or is encrypted): check the path the Database was opened with',
    },
    { code: 'SQLITE_ERROR', message: /^no such table/, fault: 'store_missing_table' },
    {
      code: 'SQLITE_ERROR',
      message: /^(no such column|table \S+ has no column named)/,
      fault: 'store_missing_table',
      fix: outdatedTableFix,
    },
    {
      code: 'SQLITE_ERROR',
      message: /^unknown database/,
      fault: 'store_unknown_database',
      fix: ({ table }) =>
        `attach that database before the store uses it (ATTACH DATABASE 'file.db' AS ${table.split('.')[0]}), or give a table without a schema`,
    },
    {
      code: /^SQLITE_BUSY/,
      fault: 'transient',
      fix: 'another connection held the write lock past the busy timeout; raise busyTimeout or shorten your own write transactions',
    },
  ],
  fixes: {
    auth: 'SQLite has no logins: check the file the Database was opened with',
    unknownDatabase:
      'SQLite could not open the database file or the journal beside it: check the path the Database was opened with, that its directory exists, and that this process may create files there (the -wal and -shm files)',
    permission: () =>
      'the database is read-only: open it without readonly: true, and make the file and its directory writable by this process (SQLite creates the -wal and -shm files beside it)',
    transient: 'check that the database file and the disk it is on are healthy',
  },
};

/**
 * The inbox in SQLite's words: one write statement per change (it holds the single write lock from
 * its first read, so a take needs no row locks), `UPDATE ... RETURNING` (3.35+, better-sqlite3 12
 * bundles a newer one), the acceptance sequence as the rowid.
 */
const sqliteInbox: SqlInboxDialect = {
  errors: { ...sqliteErrors, migration: 'sqliteInboxMigration' },
  placeholder: 'question',
  now: NOW,
  types: {
    key: 'TEXT NOT NULL UNIQUE',
    seq: 'INTEGER PRIMARY KEY',
    receiver: 'TEXT',
    token: 'TEXT',
    text: 'TEXT',
    meta: 'TEXT',
    bytes: 'BLOB',
    int: 'INTEGER',
    bigint: 'INTEGER',
  },
  tableSuffix: '',
  inlineIndexes: false,
  tokenOf: (marker, prefix) => `${marker} || printf('%013x', due_at) || ${prefix} || printf('%x', seq)`,
  insertIgnore: { head: 'INSERT INTO', tail: '\nON CONFLICT (entry_key) DO NOTHING' },
  skipLocked: '',
  returning: true,
  deleteLimit: false,
};

/** Statement values as better-sqlite3 binds them: no undefined, no booleans. */
const bindable = (values: unknown[]) =>
  values.map((v) => (v === undefined ? null : typeof v === 'boolean' ? Number(v) : v));

/** Prepared statements per database and table, shared by every store object over them. */
const prepared = new WeakMap<object, Map<string, SqliteStatement>>();

function prepare(db: SqliteDatabase, sql: string): SqliteStatement {
  let perDb = prepared.get(db);
  if (!perDb) {
    perDb = new Map();
    prepared.set(db, perDb);
  }
  let statement = perDb.get(sql);
  if (!statement) {
    statement = db.prepare(sql);
    perDb.set(sql, statement);
  }
  return statement;
}

/** Databases whose tables (per table name) exist already. */
const created = new WeakMap<object, Set<string>>();

/**
 * A store over SQLite for a better-sqlite3 `Database`; `close()` never closes it.
 *
 * @example
 * import Database from 'better-sqlite3';
 * const store = sqliteStore({ client: new Database('onceonly.db') });
 */
export function sqliteStore(options: SqliteStoreOptions): SqliteStore {
  const db = options?.client;
  if (!isDatabase(db)) {
    throw new ConfigError(
      'invalid_option',
      "onceonly: sqliteStore needs { client }: a better-sqlite3 Database (import Database from 'better-sqlite3')",
    );
  }
  const table = options.table ?? DEFAULT_TABLE;
  const t = sqliteTables(table);
  const sql = statements(t);
  const autoCreate = options.autoCreate ?? true;
  const wal = options.wal ?? true;
  const busyTimeout = options.busyTimeout;
  if (busyTimeout !== undefined && (!Number.isInteger(busyTimeout) || busyTimeout < 0)) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: sqliteStore busyTimeout must be a non-negative integer of ms, got ${busyTimeout}`,
    );
  }
  let isReady = false;

  function ensureReady(): void {
    if (isReady) return;
    const current = Number(db.pragma('busy_timeout', { simple: true }));
    if (busyTimeout !== undefined) db.pragma(`busy_timeout = ${busyTimeout}`);
    else if (!(current >= DEFAULT_BUSY_TIMEOUT)) db.pragma(`busy_timeout = ${DEFAULT_BUSY_TIMEOUT}`);
    if (wal && !db.inTransaction) {
      const mode = String(db.pragma('journal_mode', { simple: true })).toLowerCase();
      // An in-memory database has no WAL; any file does.
      if (mode !== 'wal' && mode !== 'memory') db.pragma('journal_mode = WAL');
    }
    let done = created.get(db);
    if (!done) {
      done = new Set();
      created.set(db, done);
    }
    if (autoCreate && !done.has(table)) {
      write(db, () => {
        for (const statement of ddl(t)) db.prepare(statement).run();
      });
      done.add(table);
    }
    isReady = true;
  }

  function run<T>(action: string, fn: () => T): T {
    try {
      ensureReady();
      return fn();
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      throw sqlStoreError(
        sqliteErrors,
        { action, autoCreate, table, names: t, defaultTable: table === DEFAULT_TABLE },
        err,
      );
    }
  }

  const stmt = (name: StatementName, on: SqliteDatabase = db) => prepare(on, sql[name]);

  function recordOn(on: SqliteDatabase, key: string, retentionMs: number, fingerprint?: string): boolean {
    const row = stmt('record', on).get(storeKey(key), newToken(), fingerprint ?? null, retentionMs);
    return row === undefined;
  }

  function recordSync(
    key: string,
    {
      retentionMs,
      fingerprint,
      tx,
    }: Omit<RecordOptions, 'tx'> & { tx?: SqliteDatabase | SqliteSyncTransaction },
  ): { duplicate: boolean } {
    if (tx === undefined) {
      return run('record a key', () => ({
        duplicate: write(db, () => recordOn(db, key, retentionMs, fingerprint)),
      }));
    }
    if (isSyncTx(tx)) {
      run('create its tables', () => undefined);
      const rows = tx.onceonlySqliteTxSync(sql.record, [
        storeKey(key),
        newToken(),
        fingerprint ?? null,
        retentionMs,
      ]);
      return { duplicate: rows.length === 0 };
    }
    if (!isDatabase(tx) || !tx.inTransaction) {
      throw new ConfigError(
        'tx_not_in_transaction',
        'onceonly: record() with { tx: db } must be called inside db.transaction(...); outside one the row would not join your writes',
      );
    }
    run('create its tables', () => undefined);
    // Inside the caller's transaction their own error handling sees the driver's error unchanged.
    return { duplicate: recordOn(tx, key, retentionMs, fingerprint) };
  }

  const inbox = sqlInbox({
    dialect: sqliteInbox,
    names: inboxNames(table, '"', true),
    table,
    defaultTable: table === DEFAULT_TABLE,
    autoCreate,
    store: 'sqliteStore',
    driver: {
      async query(statement, values) {
        ensureReady();
        const prepared = prepare(db, statement.text);
        if (statement.rows) {
          const rows = prepared.all(...bindable(values)) as Record<string, unknown>[];
          return { rows, changes: rows.length };
        }
        return { rows: [], changes: prepared.run(...bindable(values)).changes };
      },
      async exists() {
        return false;
      },
      async create(statements) {
        ensureReady();
        write(db, () => {
          for (const statement of statements) db.prepare(statement).run();
        });
      },
    },
  });

  const inboxTable = inboxNames(table, '"', true).table;
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

  return markBuiltin('sqlite', db as object, t.keys, {
    tables: { keys: t.keys, versions: t.versions },
    inbox,

    /**
     * The database open and the store's tables present, the inbox's too when the caller uses it
     * (looked up, never created). No clock to compare: SQLite runs in this process and its
     * timestamps are the host's own clock.
     */
    async health(scope?: HealthScope): Promise<StoreHealth> {
      const names = scope?.inbox === true ? [t.keys, t.versions, inboxTable] : [t.keys, t.versions];
      const tables: Record<string, boolean> = {};
      for (const name of names) tables[name] = tablePresent(name);
      const facts = sqlHealth(Number.NaN, tables, autoCreate);
      return {
        checks: [
          {
            name: 'clock',
            ok: true,
            detail: "the host's own: SQLite runs in this process, nothing to compare",
          },
          ...facts.checks,
        ],
      };
    },

    async ready() {
      run('create its tables', () => undefined);
    },

    async claim(key: string, { leaseMs, fingerprint, retentionMs }: ClaimOptions): Promise<Claim> {
      const stored = storeKey(key);
      return run('claim a key', (): Claim => {
        const token = newToken();
        const graceMs = retentionMs ?? 0;
        const fresh = stmt('insert').get(stored, token, fingerprint ?? null, leaseMs, graceMs) as
          | { expires_at: number }
          | undefined;
        if (fresh) {
          return {
            status: 'acquired',
            lease: createLease({
              key,
              token,
              attempt: 1,
              fingerprint,
              expiresAt: new Date(fresh.expires_at),
            }),
          };
        }
        return write(db, (): Claim => {
          const row = stmt('found').get(stored) as FoundRow | undefined;
          const same = row !== undefined && sameFingerprint(row.fingerprint, fingerprint);
          // Live; or a takeable row (released: no token; or its lease ran out) of another
          // fingerprint, which keeps it.
          const live = row !== undefined && row.expires_at > row.now_ms && row.token !== '';
          if (row && (live || (row.state === 0 && !same))) {
            if (row.state === 1) return { status: 'completed', sameFingerprint: same };
            return {
              status: 'in-flight',
              attempt: row.attempt,
              expiresAt: new Date(row.expires_at),
              sameFingerprint: same,
            };
          }
          // Absent, released or ran out: a lease is taken over with attempt + 1, a completed key
          // whose retention ran out starts over at 1.
          const at = row ? row.now_ms : clock(db);
          const attempt = row && row.state === 0 ? row.attempt + 1 : 1;
          const expiresAt = at + leaseMs;
          stmt('put').run(stored, 0, token, attempt, fingerprint ?? null, expiresAt, at, graceMs);
          return {
            status: 'acquired',
            lease: createLease({ key, token, attempt, fingerprint, expiresAt: new Date(expiresAt) }),
          };
        });
      });
    },

    async confirm(lease: Lease, { retentionMs }: { retentionMs: number }): Promise<boolean> {
      // No real token is empty: '' marks a released row, which nobody owns.
      if (lease.token === '') return false;
      const stored = storeKey(lease.key);
      return run('confirm a lease', () => {
        if (stmt('confirmOwn').run(retentionMs, stored, lease.token).changes > 0) return true;
        // Not a row with our token: vanished, or another owner's. Tokens are unique, so nothing can
        // make it ours between the two steps.
        return write(db, () => {
          const row = stmt('found').get(stored) as FoundRow | undefined;
          const at = row ? row.now_ms : clock(db);
          // Ours, or nobody's: vanished, or a completed key whose retention ran out. The work is
          // done, so it is written completed and a retry sees a duplicate.
          const ours = !row || row.token === lease.token || (row.state === 1 && row.expires_at <= row.now_ms);
          if (!ours) return false;
          stmt('put').run(
            stored,
            1,
            lease.token,
            lease.attempt,
            lease.fingerprint ?? null,
            at + retentionMs,
            at,
            0,
          );
          return true;
        });
      });
    },

    async release(lease: Lease): Promise<boolean> {
      if (lease.token === '') return false;
      return run('release a lease', () => stmt('release').run(storeKey(lease.key), lease.token).changes > 0);
    },

    async extend(lease: Lease, { leaseMs }: { leaseMs: number }): Promise<boolean> {
      if (lease.token === '') return false;
      return run(
        'extend a lease',
        () => stmt('extend').run(leaseMs, storeKey(lease.key), lease.token).changes > 0,
      );
    },

    recordSync,

    async record(
      key: string,
      { retentionMs, fingerprint, tx }: RecordOptions,
    ): Promise<{ duplicate: boolean }> {
      if (tx === undefined || isDatabase(tx) || isSyncTx(tx))
        return recordSync(key, { retentionMs, fingerprint, tx });
      if (!isAsyncTx(tx)) {
        throw new ConfigError(
          'invalid_option',
          'onceonly: record() tx must be the better-sqlite3 Database inside db.transaction(...), drizzleTx(tx, sql) or kyselyTx(trx)',
        );
      }
      run('create its tables', () => undefined);
      const rows = await tx.onceonlySqliteTx(sql.record, [
        storeKey(key),
        newToken(),
        fingerprint ?? null,
        retentionMs,
      ]);
      return { duplicate: rows.length === 0 };
    },

    async advance(entity: string, version: number): Promise<boolean> {
      assertVersion(version);
      return run('advance a version', () =>
        write(db, () => stmt('advance').get(storeKey(entity), version) !== undefined),
      );
    },

    async inspect(key: string): Promise<RecordView | undefined> {
      const row = run('read a key', () => stmt('inspect').get(storeKey(key)) as ViewRow | undefined);
      if (!row) return undefined;
      return {
        key,
        state: row.state === 1 ? 'completed' : row.released === 1 ? 'released' : 'processing',
        attempt: row.attempt,
        fingerprint: row.fingerprint ?? undefined,
        expiresAt: new Date(row.expires_at),
        updatedAt: new Date(row.updated_at),
      };
    },

    async stats(): Promise<StoreStats> {
      return run('count keys', () => stmt('stats').get() as StoreStats);
    },

    async oldestLeases(limit: number): Promise<RecordView[]> {
      const rows = run('list leases', () => stmt('oldest').all(limit) as (ViewRow & { key: string })[]);
      return rows.map((row) => ({
        key: row.key,
        state: row.released === 1 ? 'released' : 'processing',
        attempt: row.attempt,
        fingerprint: row.fingerprint ?? undefined,
        expiresAt: new Date(row.expires_at),
        updatedAt: new Date(row.updated_at),
      }));
    },

    async purgeExpired(purge: SqlitePurgeOptions = {}): Promise<number> {
      const { graceMs: grace, batch, unusedMs: unused } = purgeSettings(purge);
      let deleted = 0;
      const drain = (name: 'purge' | 'purgeVersions', ms: number) => {
        for (;;) {
          const { changes } = run('purge expired keys', () => write(db, () => stmt(name).run(ms, batch)));
          deleted += changes;
          if (changes < batch) return;
        }
      };
      drain('purge', grace);
      if (unused !== undefined) drain('purgeVersions', unused);
      return deleted;
    },

    async close(): Promise<void> {
      // The database is the caller's: nothing of ours to close.
    },
  });
}

function clock(db: SqliteDatabase): number {
  return (prepare(db, `SELECT ${NOW} AS now_ms`).get() as { now_ms: number }).now_ms;
}

/**
 * Runs `fn` holding the write lock: `BEGIN IMMEDIATE` takes it before anything is read (a deferred
 * transaction reading first could find its snapshot stale at the write, which the busy timeout does not
 * cover). Inside a transaction of the caller's, a savepoint instead: the work joins it.
 */
function write<T>(db: SqliteDatabase, fn: () => T): T {
  const nested = db.inTransaction;
  prepare(db, nested ? 'SAVEPOINT onceonly' : 'BEGIN IMMEDIATE').run();
  let result: T;
  try {
    result = fn();
  } catch (err) {
    if (nested) {
      prepare(db, 'ROLLBACK TO onceonly').run();
      prepare(db, 'RELEASE onceonly').run();
    } else if (db.inTransaction) {
      prepare(db, 'ROLLBACK').run();
    }
    throw err;
  }
  prepare(db, nested ? 'RELEASE onceonly' : 'COMMIT').run();
  return result;
}

/** What {@link kyselyTx} needs of a Kysely `Transaction` over `SqliteDialect`. */
export interface KyselyExecutor {
  executeQuery(query: {
    readonly sql: string;
    readonly parameters: readonly unknown[];
    readonly query: {
      readonly kind: 'RawNode';
      readonly sqlFragments: readonly string[];
      readonly parameters: readonly [];
    };
    readonly queryId: { readonly queryId: string };
  }): Promise<{ readonly rows: readonly unknown[] }>;
}

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
  let n = 0;
  return {
    async onceonlySqliteTx(sql, params) {
      const result = await trx.executeQuery({
        sql,
        parameters: params,
        query: { kind: 'RawNode', sqlFragments: [sql], parameters: [] },
        queryId: { queryId: `onceonly-${++n}` },
      });
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
  requireDrizzleTx(tx, sqlTag, 'all', 'db.transaction((tx) => ...) from drizzle-orm/better-sqlite3');
  return {
    onceonlySqliteTxSync(text, params) {
      const rows = tx.all(drizzleStatement(sqlTag, text, params, 'question'));
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
