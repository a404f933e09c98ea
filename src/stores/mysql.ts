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
import { ConfigError, StoreUnavailableError } from '../errors.js';
import { newToken } from '../lease/crypto.js';
import {
  assertVersion,
  type Claim,
  type ClaimOptions,
  createLease,
  type Lease,
  type RecordOptions,
  type RecordView,
  type Store,
  type StoreAdmin,
  type StoreStats,
  sameFingerprint,
} from '../lease/types.js';
import {
  type DrizzleSqlTag,
  drizzleStatement,
  type PurgeOptions,
  purgeSettings,
  requireDrizzleTx,
  type TableNames,
  tableNames,
} from './sql.js';

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
   * Deletes completed keys past their retention and takeable leases that ran out more than
   * `leaseGraceMs` ago. Returns how many rows it deleted. Schedule it (cron, the event scheduler, a
   * timer): see docs/mysql.md.
   */
  purgeExpired(options?: MysqlPurgeOptions): Promise<number>;
  /** Creates the tables now instead of on first use (a no-op after the first success). */
  ready(): Promise<void>;
  /** The (quoted) table names the store uses. */
  readonly tables: { readonly keys: string; readonly versions: string };
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
  const cols = '(id, record_key, state, token, attempt, fingerprint, expires_at, updated_at)';
  const takeable = `expires_at <= ${NOW}`;
  return {
    // The common case, a key nobody holds: a plain insert (cheaper for the server than the upsert
    // below). affectedRows counts inserted rows here whatever CLIENT_FOUND_ROWS says; insertId carries
    // the new expiry. IGNORE turns only the duplicate key into "0 rows": every value is checked first.
    insert: `INSERT IGNORE INTO ${t.keys} ${cols}
VALUES (?, ?, 0, ?, 1, ?, LAST_INSERT_ID(${NOW} + ?), ${NOW})`,

    // Inserts a lease, or takes over one (or a completed key) that ran out. The row lock of the
    // duplicate-key path serialises concurrent claims: exactly one sees the old expiry and wins.
    // insertId: the new expiry when we won, 0 when we lost; affectedRows 1 = inserted, 2 = takeover.
    claim: `INSERT INTO ${t.keys} ${cols}
VALUES (?, ?, 0, ?, 1, ?, LAST_INSERT_ID(${NOW} + ?), ${NOW})
ON DUPLICATE KEY UPDATE
  token = IF(${takeable}, ?, token),
  attempt = IF(${takeable}, IF(state = 0, attempt + 1, 1), attempt),
  fingerprint = IF(${takeable}, ?, fingerprint),
  updated_at = IF(${takeable}, ${NOW}, updated_at),
  state = IF(${takeable}, 0, state),
  expires_at = IF(${takeable}, LAST_INSERT_ID(${NOW} + ?), expires_at + LAST_INSERT_ID(0))`,

    attempt: `SELECT attempt FROM ${t.keys} WHERE id = ? AND token = ?`,

    found: `SELECT state, attempt, fingerprint, expires_at, ${NOW} AS now_ms FROM ${t.keys} WHERE id = ?`,

    // The owner's confirm, the usual case: one UPDATE. insertId: the new expiry, or 0 when the row is
    // not ours (then `confirm` below decides).
    confirmOwn: `UPDATE ${t.keys} SET state = 1, updated_at = ${NOW}, expires_at = LAST_INSERT_ID(${NOW} + ?)
WHERE id = ? AND token = ?`,

    // Owner-checked. The INSERT covers a record that vanished (released, or purged): the work is done,
    // so it is written completed; so is a completed record whose retention ran out. The same owner
    // confirming again renews. insertId: non-zero when written.
    confirm: (() => {
      const ours = `(token = ? OR (state = 1 AND ${takeable}))`;
      return `INSERT INTO ${t.keys} ${cols}
VALUES (?, ?, 1, ?, ?, ?, LAST_INSERT_ID(${NOW} + ?), ${NOW})
ON DUPLICATE KEY UPDATE
  token = IF(${ours}, ?, token),
  attempt = IF(${ours}, ?, attempt),
  fingerprint = IF(${ours}, ?, fingerprint),
  updated_at = IF(${ours}, ${NOW}, updated_at),
  state = IF(${ours}, 1, state),
  expires_at = IF(${ours}, LAST_INSERT_ID(${NOW} + ?), expires_at + LAST_INSERT_ID(0))`;
    })(),

    release: `DELETE FROM ${t.keys} WHERE id = ? AND token = ? AND state = 0`,

    extend: `UPDATE ${t.keys} SET updated_at = ${NOW}, expires_at = LAST_INSERT_ID(${NOW} + ?)
WHERE id = ? AND token = ? AND state = 0`,

    // Claim and confirm in one statement. Inside a caller's transaction the inserted row stays locked
    // until it commits: a second transaction on the same key waits on that lock, then sees the
    // committed row (a duplicate) or, after a rollback, inserts its own.
    record: `INSERT INTO ${t.keys} ${cols}
VALUES (?, ?, 1, ?, 1, ?, LAST_INSERT_ID(${NOW} + ?), ${NOW})
ON DUPLICATE KEY UPDATE
  token = IF(${takeable}, ?, token),
  attempt = IF(${takeable}, IF(state = 0, attempt + 1, 1), attempt),
  fingerprint = IF(${takeable}, ?, fingerprint),
  updated_at = IF(${takeable}, ${NOW}, updated_at),
  state = IF(${takeable}, 1, state),
  expires_at = IF(${takeable}, LAST_INSERT_ID(${NOW} + ?), expires_at + LAST_INSERT_ID(0))`,

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
    oldest: `SELECT record_key, attempt, fingerprint, expires_at, updated_at FROM ${t.keys}
WHERE state = 0 ORDER BY expires_at LIMIT `,
    inspect: `SELECT state, attempt, fingerprint, expires_at, updated_at FROM ${t.keys}
WHERE id = ? AND (state = 0 OR expires_at > ${NOW})`,

    purge: `DELETE FROM ${t.keys}
WHERE expires_at <= ${NOW} AND (state = 1 OR expires_at <= ${NOW} - ?)
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

function unavailable(action: string, err: unknown): StoreUnavailableError {
  if (err instanceof StoreUnavailableError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const detail = err instanceof Error ? err.message : String(err);
  return new StoreUnavailableError(
    `onceonly: MySQL store could not ${action}${typeof code === 'string' ? ` (${code})` : ''}: ${detail}; check that the server is reachable and the table exists (or leave autoCreate on)`,
    { cause: err },
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Keys are indexed by their SHA-256 (32 bytes), so any length and any Unicode fits the primary key. */
function idOf(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** The id of each lease this process handed out, so confirm, release and extend skip the hash. */
const leaseIds = new WeakMap<Lease, Buffer>();
const leaseId = (lease: Lease): Buffer => leaseIds.get(lease) ?? idOf(lease.key);

function keyBytes(key: string, what: string): Buffer {
  const bytes = Buffer.from(key, 'utf8');
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
      throw unavailable(`create its tables ${t.keys} and ${t.versions}`, err);
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
      return await withRetry(() => runOn(client, statement, values, prepared));
    } catch (err) {
      throw unavailable(action, err);
    }
  }

  return {
    tables: { keys: t.keys, versions: t.versions },
    ready,

    async claim(key: string, { leaseMs, fingerprint }: ClaimOptions): Promise<Claim> {
      const raw = keyBytes(key, 'key');
      const id = idOf(key);
      const fp = fingerprintBytes(fingerprint);
      const token = newToken();
      const acquired = (attempt: number, expiresMs: number): Claim => {
        const lease = createLease({ key, token, attempt, fingerprint, expiresAt: new Date(expiresMs) });
        leaseIds.set(lease, id);
        return { status: 'acquired', lease };
      };
      // A key nobody holds costs one statement; a held key two (insert, read); a takeover three. The
      // takeover is the upsert, whose row lock makes exactly one of concurrent takeovers win. A loser
      // whose re-read finds the row gone or run out (released, purged) goes round again.
      for (let round = 1; round <= 10; round++) {
        const fresh = await exec('claim a key', sql.insert, [id, raw, token, fp, leaseMs]);
        if (fresh.affectedRows === 1) return acquired(1, fresh.insertId);
        const { rows } = await exec('claim a key', sql.found, [id]);
        const row = rows[0];
        if (!row) continue;
        if (Number(row.expires_at) <= Number(row.now_ms)) {
          const won = await exec('claim a key', sql.claim, [id, raw, token, fp, leaseMs, token, fp, leaseMs]);
          if (won.insertId === 0) continue;
          if (won.affectedRows === 1) return acquired(1, won.insertId);
          // A takeover: the attempt is the old one + 1, read back under our token.
          const mine = await exec('claim a key', sql.attempt, [id, token]);
          if (!mine.rows[0]) continue;
          return acquired(Number(mine.rows[0].attempt), won.insertId);
        }
        const same = sameFingerprint(toText(row.fingerprint), fingerprint);
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
      // DELETE counts deleted rows whatever CLIENT_FOUND_ROWS says.
      const { affectedRows } = await exec('release a lease', sql.release, [leaseId(lease), lease.token]);
      return affectedRows > 0;
    },

    async extend(lease: Lease, { leaseMs }: { leaseMs: number }): Promise<boolean> {
      const { insertId } = await exec('extend a lease', sql.extend, [leaseMs, leaseId(lease), lease.token]);
      return insertId > 0;
    },

    async record(
      key: string,
      { retentionMs, fingerprint, tx }: RecordOptions,
    ): Promise<{ duplicate: boolean }> {
      const token = newToken();
      const fp = fingerprintBytes(fingerprint);
      const values = [idOf(key), keyBytes(key, 'key'), token, fp, retentionMs, token, fp, retentionMs];
      if (tx === undefined) {
        const { insertId } = await exec('record a key', sql.record, values);
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
      const { insertId } = await runOn(tx, sql.record, values, prepare);
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
        state: Number(row.state) === 1 ? 'completed' : 'processing',
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
        state: 'processing' as const,
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
  };
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
