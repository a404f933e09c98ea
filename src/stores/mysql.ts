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
import { createHash } from 'node:crypto';
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
import { ConfigError, StoreUnavailableError } from '../errors.js';
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
  tableList,
  tableNames,
} from './sql.js';
import { inboxDdl, inboxNames, type SqlInboxDialect, type SqlInboxQuery, sqlInbox } from './sql-inbox.js';

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
  /** Creates the tables now instead of on first use (a no-op after the first success). */
  ready(): Promise<void>;
  /** The (quoted) table names the store uses. */
  readonly tables: { readonly keys: string; readonly versions: string };
  /**
   * The inbox for receivers in inbox mode, in `<table>_inbox` (created on first use unless
   * `autoCreate: false`; see {@link mysqlInboxMigration} and "Inbox" in docs/mysql.md). Needs MySQL
   * 8.0.1+ or MariaDB 10.6+ (`SKIP LOCKED`).
   */
  readonly inbox: InboxStore;
}

const DEFAULT_TABLE = 'onceonly';
/** `TEXT` holds 65,535 bytes; the primary key is a SHA-256 of the key, so index limits never bite. */
const MAX_KEY_BYTES = 65_535;
const MAX_FINGERPRINT_BYTES = 512;

function mysqlTables(table: string): TableNames {
  return tableNames(table, { store: 'mysqlStore', qualifier: 'database', quote: '`', maxLength: 55 });
}

function ddl(t: TableNames): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${t.keys} (
  id BINARY(32) NOT NULL COMMENT 'SHA-256 of the key (UTF-8)',
  record_key TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  state TINYINT NOT NULL COMMENT '0 processing, 1 completed',
  token VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  attempt INT UNSIGNED NOT NULL,
  fingerprint VARBINARY(${MAX_FINGERPRINT_BYTES}) NULL,
  expires_at BIGINT NOT NULL COMMENT 'ms since the epoch, server clock',
  updated_at BIGINT NOT NULL COMMENT 'ms since the epoch, server clock',
  grace_ms BIGINT NOT NULL DEFAULT 0 COMMENT 'ms a released or run-out row is kept past expires_at',
  PRIMARY KEY (id),
  KEY ${t.index} (expires_at)
) ENGINE=InnoDB`,
    `CREATE TABLE IF NOT EXISTS ${t.versions} (
  id BINARY(32) NOT NULL COMMENT 'SHA-256 of the entity (UTF-8)',
  entity TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  version DOUBLE NOT NULL,
  updated_at BIGINT NOT NULL COMMENT 'ms since the epoch, server clock',
  PRIMARY KEY (id)
) ENGINE=InnoDB`,
  ];
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
  return `${ddl(mysqlTables(table)).join(';\n\n')};\n`;
}

/**
 * The server's clock in ms since the epoch. Plain arithmetic on UTC: `UNIX_TIMESTAMP(NOW(3))` would
 * go through the session time zone and repeat an hour when daylight saving time ends. Evaluated once
 * per statement, so every use within one statement sees the same instant.
 */
const NOW = "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000)";

/**
 * All statements, built once per table.
 *
 * ON DUPLICATE KEY UPDATE assignments run left to right and see the columns already assigned (MySQL,
 * and MariaDB unless SIMULTANEOUS_ASSIGNMENT is set). Each clause is written to be right under both
 * readings: every condition reads only columns assigned after it, or stays true once it was true.
 */
function statements(t: TableNames) {
  const cols = '(id, record_key, state, token, attempt, fingerprint, expires_at, updated_at, grace_ms)';
  // A release sets expires_at to its own NOW, so a released row (empty token) is takeable too.
  const takeable = `expires_at <= ${NOW}`;
  /**
   * Inserts a row in `state` (0 a lease, 1 completed), or takes over one that is takeable: released,
   * or its lease or retention ran out. A processing row keeps its fingerprint: with `withFingerprint`
   * (the caller has one, passed once more before each clause's own values) a row of another
   * fingerprint is left alone. The fingerprint clause stays true once true (the row's fingerprint
   * becomes ours, and a completed row's state is assigned after the clauses that read it).
   */
  const upsert = (state: 0 | 1, withFingerprint: boolean) => {
    const c = withFingerprint
      ? `(${takeable} AND (state = 1 OR fingerprint IS NULL OR fingerprint = ?))`
      : takeable;
    return `INSERT INTO ${t.keys} ${cols}
VALUES (?, ?, ${state}, ?, 1, ?, LAST_INSERT_ID(${NOW} + ?), ${NOW}, ?)
ON DUPLICATE KEY UPDATE
  token = IF(${c}, ?, token),
  attempt = IF(${c}, IF(state = 0, attempt + 1, 1), attempt),
  fingerprint = IF(${c}, ?, fingerprint),
  updated_at = IF(${c}, ${NOW}, updated_at),
  state = IF(${c}, ${state}, state),
  grace_ms = IF(${c}, ?, grace_ms),
  expires_at = IF(${c}, LAST_INSERT_ID(${NOW} + ?), expires_at + LAST_INSERT_ID(0))`;
  };
  return {
    // The common case, a key nobody holds: a plain insert (cheaper for the server than the upsert
    // below). affectedRows counts inserted rows here whatever CLIENT_FOUND_ROWS says; insertId carries
    // the new expiry. IGNORE turns only the duplicate key into "0 rows": every value is checked first.
    insert: `INSERT IGNORE INTO ${t.keys} ${cols}
VALUES (?, ?, 0, ?, 1, ?, LAST_INSERT_ID(${NOW} + ?), ${NOW}, ?)`,

    // Inserts a lease, or takes over one (or a completed key) that ran out or was released. The row
    // lock of the duplicate-key path serialises concurrent claims: exactly one sees the old expiry
    // and wins. insertId: the new expiry when we won, 0 when we lost; affectedRows 1 = inserted,
    // 2 = takeover. Values: see upsertValues().
    claim: upsert(0, false),
    claimFingerprint: upsert(0, true),

    attempt: `SELECT attempt FROM ${t.keys} WHERE id = ? AND token = ?`,

    found: `SELECT state, attempt, fingerprint, expires_at, ${NOW} AS now_ms FROM ${t.keys} WHERE id = ?`,

    // The owner's confirm, the usual case: one UPDATE. insertId: the new expiry, or 0 when the row is
    // not ours (then `confirm` below decides).
    confirmOwn: `UPDATE ${t.keys} SET state = 1, updated_at = ${NOW}, expires_at = LAST_INSERT_ID(${NOW} + ?)
WHERE id = ? AND token = ?`,

    // Owner-checked. The INSERT covers a record that vanished (its lease ran out and it was purged):
    // the work is done, so it is written completed; so is a completed record whose retention ran
    // out. The same owner confirming again renews. A released row has no token: nobody's to confirm.
    // insertId: non-zero when written.
    confirm: (() => {
      const ours = `(token = ? OR (state = 1 AND ${takeable}))`;
      return `INSERT INTO ${t.keys} ${cols}
VALUES (?, ?, 1, ?, ?, ?, LAST_INSERT_ID(${NOW} + ?), ${NOW}, 0)
ON DUPLICATE KEY UPDATE
  token = IF(${ours}, ?, token),
  attempt = IF(${ours}, ?, attempt),
  fingerprint = IF(${ours}, ?, fingerprint),
  updated_at = IF(${ours}, ${NOW}, updated_at),
  state = IF(${ours}, 1, state),
  expires_at = IF(${ours}, LAST_INSERT_ID(${NOW} + ?), expires_at + LAST_INSERT_ID(0))`;
    })(),

    // Released: no owner (empty token), the lease ends now; attempt, fingerprint and grace stay.
    // insertId: non-zero when released.
    release: `UPDATE ${t.keys} SET token = '', updated_at = ${NOW}, expires_at = LAST_INSERT_ID(${NOW})
WHERE id = ? AND token = ? AND state = 0`,

    extend: `UPDATE ${t.keys} SET updated_at = ${NOW}, expires_at = LAST_INSERT_ID(${NOW} + ?)
WHERE id = ? AND token = ? AND state = 0`,

    // Claim and confirm in one statement. Inside a caller's transaction the inserted row stays locked
    // until it commits: a second transaction on the same key waits on that lock, then sees the
    // committed row (a duplicate) or, after a rollback, inserts its own.
    record: upsert(1, false),
    recordFingerprint: upsert(1, true),

    // insertId 1 when the version was stored, 0 when it was not newer.
    advance: `INSERT INTO ${t.versions} (id, entity, version, updated_at)
VALUES (?, ?, ?, GREATEST(${NOW}, LAST_INSERT_ID(1)))
ON DUPLICATE KEY UPDATE
  updated_at = IF(version < ?, GREATEST(${NOW}, LAST_INSERT_ID(1)), GREATEST(updated_at, LAST_INSERT_ID(0))),
  version = IF(version < ?, ?, version)`,

    stats: `SELECT
  COALESCE(SUM(state = 0 AND expires_at > n.ms), 0) AS processing,
  COALESCE(SUM(state = 0 AND expires_at <= n.ms), 0) AS takeable,
  COALESCE(SUM(state = 1 AND expires_at > n.ms), 0) AS completed
FROM ${t.keys} CROSS JOIN (SELECT ${NOW} AS ms) AS n`,
    // LIMIT is inlined by oldestLeases() after an integer check (no DOUBLE parameter on MySQL 8).
    oldest: `SELECT record_key, token = '' AS released, attempt, fingerprint, expires_at, updated_at FROM ${t.keys}
WHERE state = 0 ORDER BY expires_at LIMIT `,
    inspect: `SELECT state, token = '' AS released, attempt, fingerprint, expires_at, updated_at FROM ${t.keys}
WHERE id = ? AND (state = 0 OR expires_at > ${NOW})`,

    // A takeable row (released, or its lease ran out) stays for its claim's retention (grace_ms) or
    // the purge's leaseGraceMs past its lease's end, whichever is longer.
    purge: `DELETE FROM ${t.keys}
WHERE expires_at <= ${NOW} AND (state = 1 OR expires_at + GREATEST(grace_ms, ?) <= ${NOW})
LIMIT `,

    purgeVersions: `DELETE FROM ${t.versions} WHERE updated_at <= ${NOW} - ? LIMIT `,
  } as const;
}

type Row = Record<string, unknown>;
interface Result {
  rows: Row[];
  affectedRows: number;
  insertId: number;
}

function isQueryable(client: unknown): client is MysqlQueryable {
  return (
    typeof client === 'object' &&
    client !== null &&
    typeof (client as { query?: unknown }).query === 'function'
  );
}

async function runOn(
  client: MysqlQueryable,
  sql: string,
  values: unknown[],
  prepare = false,
): Promise<Result> {
  const [result] =
    prepare && typeof client.execute === 'function'
      ? await client.execute(sql, values)
      : await client.query(sql, values);
  if (Array.isArray(result)) return { rows: result as Row[], affectedRows: 0, insertId: 0 };
  const header = (result ?? {}) as { affectedRows?: unknown; insertId?: unknown };
  return { rows: [], affectedRows: Number(header.affectedRows ?? 0), insertId: Number(header.insertId ?? 0) };
}

/** Errors after which the server rolled back the whole statement, so running it again is safe. */
const retriable = new Set([
  1213, // ER_LOCK_DEADLOCK
  1205, // ER_LOCK_WAIT_TIMEOUT
  1020, // ER_CHECKREAD (MariaDB innodb_snapshot_isolation): record changed since last read
]);

function errno(err: unknown): number | undefined {
  const n = (err as { errno?: unknown } | null)?.errno;
  return typeof n === 'number' ? n : undefined;
}

/**
 * What the store makes of the server's errno: the ones that mean a misconfiguration or the
 * connection; any other is an error that may pass. An error without a server errno is the driver's
 * own (ECONNREFUSED, PROTOCOL_CONNECTION_LOST, a connect timeout): the connection.
 */
const mysqlErrors: SqlErrorDialect = {
  store: 'MySQL',
  migration: 'mysqlMigration',
  key(err) {
    const n = errno(err);
    return n !== undefined && n > 0 ? String(n) : undefined;
  },
  shown(err) {
    const code = (err as { code?: unknown } | null)?.code;
    return typeof code === 'string' ? code : undefined;
  },
  codeless: 'unreachable',
  rules: [
    { code: '1045', fault: 'store_auth_failed' }, // ER_ACCESS_DENIED_ERROR: wrong password, unknown user
    { code: '1698', fault: 'store_auth_failed' }, // ER_ACCESS_DENIED_NO_PASSWORD_ERROR
    { code: '1130', fault: 'store_auth_failed' }, // ER_HOST_NOT_PRIVILEGED: no account for this host
    { code: '1044', fault: 'store_permission_denied' }, // ER_DBACCESS_DENIED_ERROR
    { code: '1142', fault: 'store_permission_denied' }, // ER_TABLEACCESS_DENIED_ERROR
    { code: '1143', fault: 'store_permission_denied' }, // ER_COLUMNACCESS_DENIED_ERROR
    { code: '1227', fault: 'store_permission_denied' }, // ER_SPECIFIC_ACCESS_DENIED_ERROR
    { code: '1146', fault: 'store_missing_table' }, // ER_NO_SUCH_TABLE
    { code: '1054', fault: 'store_missing_table', fix: outdatedTableFix }, // ER_BAD_FIELD_ERROR
    { code: '1049', fault: 'store_unknown_database' }, // ER_BAD_DB_ERROR
    { code: '1040', fault: 'unreachable' }, // ER_CON_COUNT_ERROR: too many connections
    { code: '1053', fault: 'unreachable' }, // ER_SERVER_SHUTDOWN
    { code: '1077', fault: 'unreachable' }, // ER_NORMAL_SHUTDOWN
    { code: '1152', fault: 'unreachable' }, // ER_ABORTING_CONNECTION
    { code: /^11(5[89]|6[01])$/, fault: 'unreachable' }, // ER_NET_READ_ERROR ... ER_NET_WRITE_INTERRUPTED
    { code: '1927', fault: 'unreachable' }, // ER_CONNECTION_KILLED
  ],
  fixes: {
    auth: "the server refused the login: check the user name and password the client connects with, and that the user exists for the host it connects from ('user'@'host')",
    unknownDatabase:
      'check the database name in the connection settings (and in the table option, when it is database.table), or create that database',
    permission: (t, setup, migration) =>
      setup
        ? `the user the client logs in as may not look up or create the tables: create them once with ${migration} as a user who may (the store then only uses them), or grant this user CREATE on the database; either way it needs SELECT, INSERT, UPDATE, DELETE on ${tableList(t)}`
        : `the user the client logs in as lacks a privilege on the store's tables: GRANT SELECT, INSERT, UPDATE, DELETE ON ${t.keys} TO that user${t.keys === t.versions ? '' : `, and the same ON ${t.versions}`}`,
    transient:
      "the server answered an error that may pass; if it persists, check the server's health and log",
  },
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The inbox in MySQL's words: no `UPDATE ... RETURNING`, so a take is a `SELECT ... FOR UPDATE SKIP
 * LOCKED` and an `UPDATE` in one short READ COMMITTED transaction; `INSERT IGNORE` for a new entry;
 * `DELETE ... LIMIT`; keys as ASCII (a stored key is printable ASCII), bodies as LONGBLOB.
 */
const mysqlInbox: SqlInboxDialect = {
  errors: { ...mysqlErrors, migration: 'mysqlInboxMigration' },
  placeholder: 'question',
  now: NOW,
  types: {
    key: 'VARCHAR(512) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY',
    seq: 'BIGINT NOT NULL AUTO_INCREMENT UNIQUE',
    receiver: 'VARCHAR(191) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin',
    token: 'VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin',
    text: 'TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin',
    meta: 'MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin',
    bytes: 'LONGBLOB',
    int: 'INT',
    bigint: 'BIGINT',
  },
  tableSuffix: ' ENGINE=InnoDB',
  inlineIndexes: true,
  tokenOf: (marker, prefix) =>
    `CONCAT(${marker}, LPAD(LOWER(HEX(due_at)), 13, '0'), ${prefix}, LOWER(HEX(seq)))`,
  insertIgnore: { head: 'INSERT IGNORE INTO', tail: '' },
  skipLocked: ' FOR UPDATE SKIP LOCKED',
  returning: false,
  deleteLimit: true,
};

/**
 * The SQL that creates the inbox's table `<table>_inbox` (for receivers in inbox mode), for teams
 * whose migrations manage the schema. Idempotent.
 *
 * @example
 * writeFileSync('migrations/20260102_onceonly_inbox.sql', mysqlInboxMigration());
 */
export function mysqlInboxMigration(table: string = DEFAULT_TABLE): string {
  mysqlTables(table);
  return `${inboxDdl(mysqlInbox, inboxNames(table, '`', false)).join(';\n\n')};\n`;
}

/** Keys are indexed by their SHA-256 (32 bytes), so any length and any Unicode fits the primary key. */
/** The row id of a key (or entity): SHA-256 of the key as stores hold it (core/keys.ts). */
function idOf(text: string): Buffer {
  return createHash('sha256').update(storeKey(text), 'utf8').digest();
}

/** The id of each lease this process handed out, so confirm, release and extend skip the hash. */
const leaseIds = new WeakMap<Lease, Buffer>();
const leaseId = (lease: Lease): Buffer => leaseIds.get(lease) ?? idOf(lease.key);

function keyBytes(key: string, what: string): Buffer {
  // Any string is a key: long or unprintable ones are hashed losslessly first, so they always fit.
  const bytes = Buffer.from(storeKey(key), 'utf8');
  if (bytes.length > MAX_KEY_BYTES) {
    throw new TypeError(
      `onceonly: mysqlStore ${what} is ${bytes.length} bytes of UTF-8; at most ${MAX_KEY_BYTES} fit. Hash long keys before passing them`,
    );
  }
  return bytes;
}

function fingerprintBytes(fingerprint: string | undefined): Buffer | null {
  if (fingerprint == null) return null;
  const bytes = Buffer.from(fingerprint, 'utf8');
  if (bytes.length > MAX_FINGERPRINT_BYTES) {
    throw new TypeError(
      `onceonly: mysqlStore fingerprint is ${bytes.length} bytes; at most ${MAX_FINGERPRINT_BYTES} fit. Pass a digest such as a SHA-256 in hex`,
    );
  }
  return bytes;
}

function toText(v: unknown): string | undefined {
  if (v == null) return undefined;
  if (Buffer.isBuffer(v)) return v.toString('utf8');
  if (v instanceof Uint8Array) return Buffer.from(v).toString('utf8');
  return String(v);
}

/**
 * The values of an `upsert` statement: the row, then each clause's own values, each preceded by the
 * fingerprint again when the statement checks it (`claimFingerprint`, `recordFingerprint`).
 */
function upsertValues(
  id: Buffer,
  raw: Buffer,
  token: string,
  fp: Buffer | null,
  ms: number,
  graceMs: number,
): unknown[] {
  const c = fp === null ? [] : [fp];
  return [id, raw, token, fp, ms, graceMs, ...c, token, ...c, ...c, fp, ...c, ...c, ...c, graceMs, ...c, ms];
}

/**
 * A Connection (not a pool) runs one transaction at a time, and a statement sent while one is open
 * runs inside it (undone by its rollback): on a lone Connection every statement of the stores over
 * it, and every inbox transaction as a whole, take their turn here.
 */
const connectionQueues = new WeakMap<object, Promise<unknown>>();

/** Tables created per client and table, so many store objects over one pool run the DDL once. */
const created = new WeakMap<object, Map<string, Promise<void>>>();

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
  const t = mysqlTables(table);
  const sql = statements(t);
  const autoCreate = options.autoCreate ?? true;
  const retries = options.deadlockRetries ?? 5;
  const prepare = options.prepare ?? true;
  const unavailable = (action: string, err: unknown, setup = false) =>
    sqlStoreError(
      mysqlErrors,
      { action, setup, autoCreate, table, names: t, defaultTable: table === DEFAULT_TABLE },
      err,
    );
  if (!Number.isInteger(retries) || retries < 0) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: mysqlStore deadlockRetries must be a non-negative integer, got ${retries}`,
    );
  }

  async function tablesExist(): Promise<boolean> {
    try {
      await runOn(client, `SELECT 1 FROM ${t.keys} LIMIT 0`, []);
      await runOn(client, `SELECT 1 FROM ${t.versions} LIMIT 0`, []);
      return true;
    } catch {
      return false;
    }
  }

  async function createTables(): Promise<void> {
    try {
      // Look first: a user without the CREATE privilege is refused even CREATE TABLE IF NOT EXISTS.
      if (await tablesExist()) return;
      for (const statement of ddl(t)) await withRetry(() => runOn(client, statement, []));
    } catch (err) {
      throw unavailable(`create its tables ${t.keys} and ${t.versions}`, err, true);
    }
  }

  function ready(): Promise<void> {
    if (!autoCreate) return Promise.resolve();
    let perClient = created.get(client);
    if (!perClient) {
      perClient = new Map();
      created.set(client, perClient);
    }
    let pending = perClient.get(table);
    if (!pending) {
      pending = createTables();
      perClient.set(table, pending);
      const cache = perClient;
      pending.catch(() => cache.delete(table));
    }
    return pending;
  }

  async function withRetry<T>(fn: () => Promise<T>): Promise<T> {
    for (let round = 0; ; round++) {
      try {
        return await fn();
      } catch (err) {
        if (round >= retries || !retriable.has(errno(err) ?? 0)) throw err;
        // Jittered backoff, so the two sides of a deadlock do not collide again in lockstep.
        await sleep(Math.random() * 5 * 2 ** round);
      }
    }
  }

  async function exec(
    action: string,
    statement: string,
    values: unknown[],
    prepared = prepare,
  ): Promise<Result> {
    await ready();
    try {
      return await inTurn(() => withRetry(() => runOn(client, statement, values, prepared)));
    } catch (err) {
      throw unavailable(action, err);
    }
  }

  const lone = typeof (client as { getConnection?: unknown }).getConnection !== 'function';
  /** On a lone Connection, `run` after everything sent before it (see connectionQueues). */
  function inTurn<T>(run: () => Promise<T>): Promise<T> {
    if (!lone) return run();
    const queued = (connectionQueues.get(client) ?? Promise.resolve()).then(run, run);
    connectionQueues.set(
      client,
      queued.catch(() => undefined),
    );
    return queued;
  }

  const inboxTables = inboxNames(table, '`', false);
  const asResult = async (pending: Promise<Result>, rows: boolean) => {
    const r = await pending;
    return { rows: r.rows, changes: rows ? r.rows.length : r.affectedRows };
  };
  const inbox = sqlInbox({
    dialect: mysqlInbox,
    names: inboxTables,
    table,
    defaultTable: table === DEFAULT_TABLE,
    autoCreate,
    store: 'mysqlStore',
    driver: {
      query: (statement, values) =>
        asResult(
          inTurn(() => withRetry(() => runOn(client, statement.text, values, prepare))),
          statement.rows,
        ),
      transaction<T>(fn: (query: SqlInboxQuery) => Promise<T>): Promise<T> {
        const pool = client as { getConnection?: () => Promise<MysqlQueryable & { release(): void }> };
        const once = async (): Promise<T> => {
          const conn = typeof pool.getConnection === 'function' ? await pool.getConnection() : client;
          try {
            // READ COMMITTED: no gap locks, so the take's locking read never blocks an accept.
            await runOn(conn, 'SET TRANSACTION ISOLATION LEVEL READ COMMITTED', []);
            await runOn(conn, 'START TRANSACTION', []);
            try {
              const result = await fn((s, v) => asResult(runOn(conn, s.text, v, prepare), s.rows));
              await runOn(conn, 'COMMIT', []);
              return result;
            } catch (err) {
              await runOn(conn, 'ROLLBACK', []).catch(() => undefined);
              throw err;
            }
          } finally {
            if (conn !== client) (conn as unknown as { release(): void }).release();
          }
        };
        return inTurn(() => withRetry(once));
      },
      async exists() {
        try {
          await runOn(client, `SELECT 1 FROM ${inboxTables.table} LIMIT 0`, []);
          return true;
        } catch {
          return false;
        }
      },
      async create(statements) {
        for (const statement of statements) await withRetry(() => runOn(client, statement, []));
      },
    },
  });

  const ER_NO_SUCH_TABLE = 1146;
  /** Whether a table is there: looked up, never created (ER_NO_SUCH_TABLE is "no", any other error is thrown). */
  async function tablePresent(name: string): Promise<boolean> {
    try {
      await inTurn(() => runOn(client, `SELECT 1 FROM ${name} LIMIT 0`, []));
      return true;
    } catch (err) {
      if (errno(err) === ER_NO_SUCH_TABLE) return false;
      throw err;
    }
  }

  return markBuiltin('mysql', client as object, t.keys, {
    tables: { keys: t.keys, versions: t.versions },
    ready,
    inbox,

    /**
     * Reachable, the server's clock (`UNIX_TIMESTAMP(NOW(3))`, whatever the session's time zone),
     * and the store's tables present, the inbox's too when the caller uses it (looked up, never
     * created).
     */
    async health(scope?: HealthScope): Promise<StoreHealth> {
      const { rows } = await inTurn(() =>
        runOn(client, 'SELECT UNIX_TIMESTAMP(NOW(3)) * 1000 AS now_ms', []),
      );
      const names = scope?.inbox === true ? [t.keys, t.versions, inboxTables.table] : [t.keys, t.versions];
      const tables: Record<string, boolean> = {};
      for (const name of names) tables[name] = await tablePresent(name);
      return sqlHealth(Number(rows[0]?.now_ms), tables, autoCreate);
    },

    async claim(key: string, { leaseMs, fingerprint, retentionMs }: ClaimOptions): Promise<Claim> {
      const raw = keyBytes(key, 'key');
      const id = idOf(key);
      const fp = fingerprintBytes(fingerprint);
      const token = newToken();
      const graceMs = retentionMs ?? 0;
      const acquired = (attempt: number, expiresMs: number): Claim => {
        const lease = createLease({ key, token, attempt, fingerprint, expiresAt: new Date(expiresMs) });
        leaseIds.set(lease, id);
        return { status: 'acquired', lease };
      };
      // A key nobody holds costs one statement; a held key two (insert, read); a takeover three. The
      // takeover is the upsert, whose row lock makes exactly one of concurrent takeovers win. A loser
      // whose re-read finds the row gone or takeable (released, run out, purged) goes round again.
      for (let round = 1; round <= 10; round++) {
        const fresh = await exec('claim a key', sql.insert, [id, raw, token, fp, leaseMs, graceMs]);
        if (fresh.affectedRows === 1) return acquired(1, fresh.insertId);
        const { rows } = await exec('claim a key', sql.found, [id]);
        const row = rows[0];
        if (!row) continue;
        const same = sameFingerprint(toText(row.fingerprint), fingerprint);
        // Takeable: released or ran out; a processing row of another fingerprint keeps it (in-flight below).
        if (Number(row.expires_at) <= Number(row.now_ms) && (Number(row.state) === 1 || same)) {
          const won = await exec(
            'claim a key',
            fp === null ? sql.claim : sql.claimFingerprint,
            upsertValues(id, raw, token, fp, leaseMs, graceMs),
          );
          if (won.insertId === 0) continue;
          if (won.affectedRows === 1) return acquired(1, won.insertId);
          // A takeover: the attempt is the old one + 1, read back under our token.
          const mine = await exec('claim a key', sql.attempt, [id, token]);
          if (!mine.rows[0]) continue;
          return acquired(Number(mine.rows[0].attempt), won.insertId);
        }
        if (Number(row.state) === 1) return { status: 'completed', sameFingerprint: same };
        return {
          status: 'in-flight',
          attempt: Number(row.attempt),
          expiresAt: new Date(Number(row.expires_at)),
          sameFingerprint: same,
        };
      }
      throw new StoreUnavailableError(
        `onceonly: MySQL store could not claim "${key}": it changed under every one of 10 tries; retry the delivery later`,
      );
    },

    async confirm(lease: Lease, { retentionMs }: { retentionMs: number }): Promise<boolean> {
      // No real token is empty: '' marks a released row, which nobody owns.
      if (lease.token === '') return false;
      const id = leaseId(lease);
      const own = await exec('confirm a lease', sql.confirmOwn, [retentionMs, id, lease.token]);
      if (own.insertId > 0) return true;
      // Not (or no longer) a row with our token: vanished, ran out, or another owner's. Tokens are
      // unique, so nothing can make the row ours between the two statements.
      const fp = fingerprintBytes(lease.fingerprint);
      const { insertId } = await exec('confirm a lease', sql.confirm, [
        id,
        keyBytes(lease.key, 'key'),
        lease.token,
        lease.attempt,
        fp,
        retentionMs,
        lease.token,
        lease.token,
        lease.token,
        lease.attempt,
        lease.token,
        fp,
        lease.token,
        lease.token,
        lease.token,
        retentionMs,
      ]);
      return insertId > 0;
    },

    async release(lease: Lease): Promise<boolean> {
      if (lease.token === '') return false;
      const { insertId } = await exec('release a lease', sql.release, [leaseId(lease), lease.token]);
      return insertId > 0;
    },

    async extend(lease: Lease, { leaseMs }: { leaseMs: number }): Promise<boolean> {
      if (lease.token === '') return false;
      const { insertId } = await exec('extend a lease', sql.extend, [leaseMs, leaseId(lease), lease.token]);
      return insertId > 0;
    },

    async record(
      key: string,
      { retentionMs, fingerprint, tx }: RecordOptions,
    ): Promise<{ duplicate: boolean }> {
      const token = newToken();
      const fp = fingerprintBytes(fingerprint);
      const values = upsertValues(idOf(key), keyBytes(key, 'key'), token, fp, retentionMs, 0);
      const statement = fp === null ? sql.record : sql.recordFingerprint;
      if (tx === undefined) {
        const { insertId } = await exec('record a key', statement, values);
        return { duplicate: insertId === 0 };
      }
      if (!isQueryable(tx)) {
        throw new ConfigError(
          'invalid_option',
          'onceonly: record() tx must be a mysql2 connection inside a transaction, kyselyTx(trx) or drizzleTx(tx, sql)',
        );
      }
      await ready();
      // No retry and no wrapping: a deadlock rolled back the caller's whole transaction, and their
      // retry logic should see the driver's own error (errno 1213) as for any of their statements.
      const { insertId } = await runOn(tx, statement, values, prepare);
      return { duplicate: insertId === 0 };
    },

    async advance(entity: string, version: number): Promise<boolean> {
      assertVersion(version);
      const { insertId } = await exec('advance a version', sql.advance, [
        idOf(entity),
        keyBytes(entity, 'entity'),
        version,
        version,
        version,
        version,
      ]);
      return insertId > 0;
    },

    async inspect(key: string): Promise<RecordView | undefined> {
      const { rows } = await exec('read a key', sql.inspect, [idOf(key)]);
      const row = rows[0];
      if (!row) return undefined;
      return {
        key,
        state: Number(row.state) === 1 ? 'completed' : Number(row.released) === 1 ? 'released' : 'processing',
        attempt: Number(row.attempt),
        fingerprint: toText(row.fingerprint),
        expiresAt: new Date(Number(row.expires_at)),
        updatedAt: new Date(Number(row.updated_at)),
      };
    },

    async stats(): Promise<StoreStats> {
      const { rows } = await exec('count keys', sql.stats, []);
      const row = rows[0] ?? {};
      return {
        processing: Number(row.processing ?? 0),
        takeable: Number(row.takeable ?? 0),
        completed: Number(row.completed ?? 0),
      };
    },

    async oldestLeases(limit: number): Promise<RecordView[]> {
      if (!Number.isInteger(limit) || limit < 0)
        throw new ConfigError('invalid_option', 'onceonly: oldestLeases needs a non-negative integer limit');
      const { rows } = await exec('list leases', sql.oldest + String(limit), []);
      return rows.map((row) => ({
        key: toText(row.record_key) ?? '',
        state: Number(row.released) === 1 ? ('released' as const) : ('processing' as const),
        attempt: Number(row.attempt),
        fingerprint: toText(row.fingerprint),
        expiresAt: new Date(Number(row.expires_at)),
        updatedAt: new Date(Number(row.updated_at)),
      }));
    },

    async purgeExpired(purge: MysqlPurgeOptions = {}): Promise<number> {
      const { graceMs: grace, batch, unusedMs: unused } = purgeSettings(purge);
      let deleted = 0;
      for (;;) {
        // LIMIT takes no prepared parameter of type DOUBLE on MySQL 8.0.22+: inline the checked integer.
        const { affectedRows } = await exec('purge expired keys', sql.purge + batch, [grace], false);
        deleted += affectedRows;
        if (affectedRows < batch) break;
      }
      if (unused !== undefined) {
        for (;;) {
          const { affectedRows } = await exec(
            'purge unused versions',
            sql.purgeVersions + batch,
            [unused],
            false,
          );
          deleted += affectedRows;
          if (affectedRows < batch) break;
        }
      }
      return deleted;
    },

    async close(): Promise<void> {
      // The client is the caller's: nothing of ours to close.
    },
  });
}

/** What {@link kyselyTx} needs of a Kysely `Transaction` (or `Kysely` instance) over `MysqlDialect`. */
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
  }): Promise<{
    readonly rows: readonly unknown[];
    readonly insertId?: bigint;
    readonly numAffectedRows?: bigint;
  }>;
}

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
  let n = 0;
  return {
    async query(sql: string, values: unknown[] = []) {
      const result = await trx.executeQuery({
        sql,
        parameters: values,
        query: { kind: 'RawNode', sqlFragments: [sql], parameters: [] },
        queryId: { queryId: `onceonly-${++n}` },
      });
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
  requireDrizzleTx(tx, sql, 'execute', 'db.transaction(async (tx) => ...) from drizzle-orm/mysql2');
  return {
    async query(text: string, values: unknown[] = []) {
      // drizzle-orm/mysql2 answers with mysql2's own [result, fields].
      const result = await tx.execute(drizzleStatement(sql, text, values, 'question'));
      return (Array.isArray(result) ? result : [result, undefined]) as [unknown, unknown];
    },
  };
}
