/**
 * MySQL's (and MariaDB's) words for the SQL store (see core.ts): its tables, statements, errors and
 * inbox, and its claim: a plain insert for a key nobody holds, else a read, and the upsert whose row
 * lock lets exactly one of concurrent takeovers win. All time is the server's (`UTC_TIMESTAMP(3)`,
 * in ms), and each statement reports what it did through `LAST_INSERT_ID(expr)`.
 */

import { createHash } from 'node:crypto';
import { storeKey } from '../../core/keys.js';
import type { Lease } from '../../core/types.js';
import { ConfigError } from '../../errors.js';
import { outdatedTableFix, type SqlErrorDialect, type TableNames, tableList, tableNames } from '../sql.js';
import type { SqlInboxDialect } from '../sql-inbox.js';
import { heldBy, named, tableParts, toText } from './core.js';
import type { SqlStepsDialect } from './steps.js';
import type { SqlCall, SqlDialect, SqlStatement } from './types.js';

/** `TEXT` holds 65,535 bytes; the primary key is a SHA-256 of the key, so index limits never bite. */
const MAX_KEY_BYTES = 65_535;
const MAX_FINGERPRINT_BYTES = 512;

export function mysqlTables(table: string): TableNames {
  return tableNames(table, { store: 'mysqlStore', qualifier: 'database', quote: '`', maxLength: 55 });
}

/** The `steps` column: a JSON object as text (up to 16 MiB: a key's steps hold at most 1 MiB). */
export const mysqlSteps: SqlStepsDialect = {
  type: 'MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin',
  merge: (name, value) => `JSON_MERGE_PATCH(COALESCE(steps, '{}'), JSON_OBJECT(${name}, ${value}))`,
  missing: (err) => errno(err) === 1054, // ER_BAD_FIELD_ERROR
  duplicate: (err) => errno(err) === 1060, // ER_DUP_FIELDNAME
};

export function ddl(t: TableNames): string[] {
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
  steps ${mysqlSteps.type} NULL COMMENT 'durable steps: JSON object of name to result',
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
 * The server's clock in ms since the epoch. Plain arithmetic on UTC: `UNIX_TIMESTAMP(NOW(3))` would
 * go through the session time zone and repeat an hour when daylight saving time ends. Evaluated once
 * per statement, so every use within one statement sees the same instant.
 */
export const NOW = "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000)";

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
  steps = IF(${c}, ${state === 0 ? 'IF(state = 0, steps, NULL)' : 'NULL'}, steps),
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
    confirmOwn: `UPDATE ${t.keys} SET state = 1, steps = NULL, updated_at = ${NOW}, expires_at = LAST_INSERT_ID(${NOW} + ?)
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
  steps = IF(${ours}, NULL, steps),
  updated_at = IF(${ours}, ${NOW}, updated_at),
  state = IF(${ours}, 1, state),
  expires_at = IF(${ours}, LAST_INSERT_ID(${NOW} + ?), expires_at + LAST_INSERT_ID(0))`;
    })(),

    // Released: no owner (empty token), the lease ends now; attempt, fingerprint and grace stay.
    // insertId: non-zero when released.
    release: `UPDATE ${t.keys} SET token = '', updated_at = ${NOW}, expires_at = LAST_INSERT_ID(${NOW})
WHERE id = ? AND token = ? AND state = 0`,

    // Durable steps: the owner's save merges one name into the row's object; insertId the attempt
    // (non-zero) when the row was ours, written or not (the same value again changes nothing).
    loadSteps: `SELECT steps FROM ${t.keys} WHERE id = ?`,
    saveStep: `UPDATE ${t.keys} SET steps = ${mysqlSteps.merge('?', '?')}, attempt = LAST_INSERT_ID(attempt)
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

export function errno(err: unknown): number | undefined {
  const n = (err as { errno?: unknown } | null)?.errno;
  return typeof n === 'number' ? n : undefined;
}

/**
 * What the store makes of the server's errno: the ones that mean a misconfiguration or the
 * connection; any other is an error that may pass. An error without a server errno is the driver's
 * own (ECONNREFUSED, PROTOCOL_CONNECTION_LOST, a connect timeout): the connection.
 */
export const mysqlErrors: SqlErrorDialect = {
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

/**
 * The inbox in MySQL's words: no `UPDATE ... RETURNING`, so a take is a `SELECT ... FOR UPDATE SKIP
 * LOCKED` and an `UPDATE` in one short READ COMMITTED transaction; `INSERT IGNORE` for a new entry;
 * `DELETE ... LIMIT`; keys as ASCII (a stored key is printable ASCII), bodies as LONGBLOB.
 */
export const mysqlInbox: SqlInboxDialect = {
  errors: { ...mysqlErrors, migration: 'mysqlInboxMigration' },
  steps: mysqlSteps,
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
  acceptMany: 'all-or-nothing',
  deleteLimit: true,
};

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
  return [
    id,
    raw,
    token,
    fp,
    ms,
    graceMs,
    ...c,
    token,
    ...c,
    ...c,
    ...c,
    fp,
    ...c,
    ...c,
    ...c,
    graceMs,
    ...c,
    ms,
  ];
}

/** `statement` with an integer inlined after its `LIMIT ` (MySQL 8.0.22+ takes no DOUBLE parameter there). */
const limited = (statement: SqlStatement, limit: number, unprepared: boolean): SqlStatement => ({
  ...statement,
  text: statement.text + String(limit),
  unprepared,
});

/** MySQL as a SQL store's dialect, for the `table` option (checked here). */
export function mysqlDialect(table: string): SqlDialect {
  const t = mysqlTables(table);
  const s = named(statements(t), (name) => ({
    rows:
      name === 'attempt' ||
      name === 'found' ||
      name === 'stats' ||
      name === 'oldest' ||
      name === 'inspect' ||
      name === 'loadSteps',
  }));
  /** An upsert, checking the fingerprint when there is one: see upsertValues(). */
  const upsert = (
    plain: SqlStatement,
    checked: SqlStatement,
    values: Parameters<typeof upsertValues>,
  ): SqlCall => [values[3] === null ? plain : checked, upsertValues(...values)];
  return {
    kind: 'mysql',
    errors: mysqlErrors,
    ...tableParts(table, t, '`', false),
    inbox: mysqlInbox,
    steps: mysqlSteps,
    columns: { key: 'record_key', expires: 'expires_at', updated: 'updated_at', completed: '1' },
    purgeVersionsAction: 'purge unused versions',
    calls: {
      release: (lease) => [s.release, [leaseId(lease), lease.token]],
      extend: (lease, leaseMs) => [s.extend, [leaseMs, leaseId(lease), lease.token]],
      advance: (entity, v) => [s.advance, [idOf(entity), keyBytes(entity, 'entity'), v, v, v, v]],
      record(key, token, fingerprint, retentionMs) {
        const fp = fingerprintBytes(fingerprint);
        return upsert(s.record, s.recordFingerprint, [
          idOf(key),
          keyBytes(key, 'key'),
          token,
          fp,
          retentionMs,
          0,
        ]);
      },
      confirmOwn: (lease, retentionMs) => [s.confirmOwn, [retentionMs, leaseId(lease), lease.token]],
      loadSteps: (lease) => [s.loadSteps, [leaseId(lease)]],
      saveStep: (lease, name, value) => [s.saveStep, [name, value, leaseId(lease), lease.token]],
      inspect: (key) => [s.inspect, [idOf(key)]],
      stats: () => [s.stats, []],
      oldest(limit) {
        if (!Number.isInteger(limit) || limit < 0)
          throw new ConfigError(
            'invalid_option',
            'onceonly: oldestLeases needs a non-negative integer limit',
          );
        return [limited(s.oldest, limit, false), []];
      },
      // LIMIT takes no prepared parameter of type DOUBLE on MySQL 8.0.22+: inline the checked integer.
      purge: (graceMs, batch) => [limited(s.purge, batch, true), [graceMs]],
      purgeVersions: (unusedMs, batch) => [limited(s.purgeVersions, batch, true), [unusedMs]],
    },
    // A key nobody holds costs one statement; a held key two (insert, read); a takeover three. The
    // takeover is the upsert, whose row lock makes exactly one of concurrent takeovers win. A loser
    // whose re-read finds the row gone or takeable (released, run out, purged) goes round again.
    claimRound({ key, token, leaseMs, fingerprint, graceMs }, { exec }) {
      const raw = keyBytes(key, 'key');
      const id = idOf(key);
      const fp = fingerprintBytes(fingerprint);
      const acquired = (attempt: number, expiresMs: number) =>
        ({ acquired: true, attempt, expiresMs, rowId: id }) as const;
      return async () => {
        const fresh = await exec('claim a key', [s.insert, [id, raw, token, fp, leaseMs, graceMs]]);
        if (fresh.count === 1) return acquired(1, fresh.id);
        const { rows } = await exec('claim a key', [s.found, [id]]);
        const row = rows[0];
        if (!row) return undefined;
        const found = {
          live: Number(row.expires_at) > Number(row.now_ms),
          completed: Number(row.state) === 1,
          attempt: Number(row.attempt),
          expiresMs: Number(row.expires_at),
          fingerprint: toText(row.fingerprint),
        };
        // Takeable: released or ran out; a processing row of another fingerprint keeps it.
        const held = heldBy(found, fingerprint);
        if (held) return held;
        const won = await exec(
          'claim a key',
          upsert(s.claim, s.claimFingerprint, [id, raw, token, fp, leaseMs, graceMs]),
        );
        if (won.id === 0) return undefined;
        if (won.count === 1) return acquired(1, won.id);
        // A takeover: the attempt is the old one + 1, read back under our token.
        const mine = await exec('claim a key', [s.attempt, [id, token]]);
        if (!mine.rows[0]) return undefined;
        return acquired(Number(mine.rows[0].attempt), won.id);
      };
    },
    // Not (or no longer) a row with our token: vanished, ran out, or another owner's.
    async confirm(lease, retentionMs, { exec }) {
      const fp = fingerprintBytes(lease.fingerprint);
      const { token, attempt } = lease;
      const row = [leaseId(lease), keyBytes(lease.key, 'key'), token, attempt, fp, retentionMs];
      const clauses = [token, token, token, attempt, token, fp, token, token, token, token, retentionMs];
      return (await exec('confirm a lease', [s.confirm, [...row, ...clauses]])).done;
    },
    leased: (lease, rowId) => leaseIds.set(lease, rowId as Buffer),
  };
}
