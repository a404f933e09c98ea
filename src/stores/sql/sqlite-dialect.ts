/**
 * SQLite's words for the SQL store (see core.ts): its tables, statements, errors and inbox, and its
 * claim: a plain insert for a key nobody holds, else the row read and written under the write lock
 * (`BEGIN IMMEDIATE`), synchronously. All time is SQLite's own clock (`julianday('now')`, in ms).
 */

import { storeKey } from '../../core/keys.js';
import { outdatedTableFix, type SqlErrorDialect, type TableNames, tableNames } from '../sql.js';
import type { SqlInboxDialect } from '../sql-inbox.js';
import { isLater, then } from './awaitable.js';
import { heldBy, keyedCalls, named, tableParts } from './core.js';
import { sqliteCode } from './sqlite-clients.js';
import type { SqlStepsDialect } from './steps.js';
import type { Awaitable, SqlDialect, SqlExec } from './types.js';

export const DEFAULT_BUSY_TIMEOUT = 5_000;

export function sqliteTables(table: string): TableNames {
  return tableNames(table, {
    store: 'sqliteStore',
    qualifier: 'schema',
    quote: '"',
    maxLength: 100,
    indexInSchema: true,
  });
}

/** The `steps` column: a JSON object as text, merged by JSON1's json_patch. */
export const sqliteSteps: SqlStepsDialect = {
  type: 'TEXT',
  merge: (name, value) => `json_patch(COALESCE(steps, '{}'), json_object(${name}, ${value}))`,
  missing: (err) => /^no such column/.test(String((err as Error | null)?.message)),
  duplicate: (err) => /^duplicate column name/.test(String((err as Error | null)?.message)),
};

export function ddl(t: TableNames): string[] {
  return [
    `CREATE TABLE IF NOT EXISTS ${t.keys} (
  key TEXT NOT NULL PRIMARY KEY,
  state INTEGER NOT NULL, -- 0 processing, 1 completed
  token TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  fingerprint TEXT,
  expires_at INTEGER NOT NULL, -- ms since the epoch, SQLite's clock
  updated_at INTEGER NOT NULL,
  grace_ms INTEGER NOT NULL DEFAULT 0, -- ms a released or run-out row is kept past expires_at
  steps TEXT -- durable steps: JSON object of name to result
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
 * SQLite's clock in ms since the epoch. `julianday('now')` works on every SQLite version (unlike
 * `unixepoch('subsec')`, 3.42+) and is fixed for the duration of one statement; its double has about
 * 0.05 ms of resolution, so rounding gives the exact millisecond SQLite holds internally.
 */
export const NOW = "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)";

function statements(t: TableNames) {
  const cols = '(key, state, token, attempt, fingerprint, expires_at, updated_at, grace_ms)';
  return {
    // A key nobody holds: one statement, atomic on its own (an autocommit write takes the write lock
    // before it reads). No row back when the key exists; then claim() decides under BEGIN IMMEDIATE.
    insert: `INSERT INTO ${t.keys} ${cols} VALUES (?, 0, ?, 1, ?, ${NOW} + ?, ${NOW}, ?)
ON CONFLICT (key) DO NOTHING
RETURNING expires_at`,
    // The owner's confirm, the usual case: one statement. No change when the row is not ours.
    confirmOwn: `UPDATE ${t.keys} SET state = 1, steps = NULL, expires_at = ${NOW} + ?, updated_at = ${NOW}
WHERE key = ? AND token = ?`,
    found: `SELECT state, token, attempt, fingerprint, expires_at, ${NOW} AS now_ms FROM ${t.keys} WHERE key = ?`,
    // A claim's or confirm's write under the write lock. The steps stay while the row stays
    // processing (a takeover), and go when it completes or a completed key starts over.
    put: `INSERT INTO ${t.keys} AS r ${cols} VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (key) DO UPDATE SET state = excluded.state, token = excluded.token, attempt = excluded.attempt,
  fingerprint = excluded.fingerprint, expires_at = excluded.expires_at, updated_at = excluded.updated_at,
  grace_ms = excluded.grace_ms, steps = CASE WHEN r.state = 0 AND excluded.state = 0 THEN r.steps END`,
    clock: `SELECT ${NOW} AS now_ms`,
    // Released: no owner (empty token), the lease ends now; attempt, fingerprint and grace stay.
    release: `UPDATE ${t.keys} SET token = '', expires_at = ${NOW}, updated_at = ${NOW}
WHERE key = ? AND token = ? AND state = 0`,
    // Durable steps: the owner's save merges one name into the row's object.
    loadSteps: `SELECT steps FROM ${t.keys} WHERE key = ?`,
    saveStep: `UPDATE ${t.keys} SET steps = ${sqliteSteps.merge('?', '?')} WHERE key = ? AND token = ? AND state = 0`,
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
  updated_at = excluded.updated_at,
  steps = NULL
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

/**
 * What the store makes of SQLite's result codes: the ones that mean a misconfiguration (a read-only
 * file, a missing table, a file that cannot be opened), and the write lock held too long. Any other
 * is an error that may pass. `no such table` and `unknown database` are plain SQLITE_ERROR, told
 * apart by their message.
 */
export const sqliteErrors: SqlErrorDialect = {
  store: 'SQLite',
  migration: 'sqliteMigration',
  // The code by its name whichever client threw (sqlite-clients.ts: node:sqlite's is a number).
  key: sqliteCode,
  shown(err) {
    const code = (err as { code?: unknown } | null)?.code;
    return sqliteCode(err) ?? (typeof code === 'string' ? code : undefined);
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
      'the database is read-only: open it without readonly: true (readOnly in node:sqlite), and make the file and its directory writable by this process (SQLite creates the -wal and -shm files beside it)',
    transient: 'check that the database file and the disk it is on are healthy',
  },
};

/**
 * The inbox in SQLite's words: one write statement per change (it holds the single write lock from
 * its first read, so a take needs no row locks), `UPDATE ... RETURNING` (3.35+: better-sqlite3 12,
 * Node 22 and 24 and Bun bundle newer ones), the acceptance sequence as the rowid.
 */
export const sqliteInbox: SqlInboxDialect = {
  errors: { ...sqliteErrors, migration: 'sqliteInboxMigration' },
  steps: sqliteSteps,
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

/** Statements that return rows (read with `all`); the others report their changes. */
const ROWS = new Set([
  'insert',
  'found',
  'clock',
  'record',
  'advance',
  'stats',
  'oldest',
  'inspect',
  'loadSteps',
]);
/** Statements run holding the write lock (`BEGIN IMMEDIATE`, or a savepoint inside a transaction). */
const LOCKED = new Set(['record', 'advance', 'purge', 'purgeVersions']);

/** A step of the synchronous driver, which answers at once. */
function sync<T>(value: Awaitable<T>): T {
  if (isLater(value)) {
    throw new TypeError('onceonly: the SQLite store answers synchronously; an answer came later');
  }
  return value as T;
}

/** SQLite as a SQL store's dialect, for the `table` option (checked here). */
export function sqliteDialect(table: string): SqlDialect {
  const t = sqliteTables(table);
  const s = named(statements(t), (name) => ({ rows: ROWS.has(name), lock: LOCKED.has(name) }));
  /** The row of `key` and the clock, read under the write lock. */
  const found = (exec: SqlExec, action: string, stored: string) => {
    const row = sync(exec(action, [s.found, [stored]])).rows[0];
    const now = row ? Number(row.now_ms) : Number(sync(exec(action, [s.clock, []])).rows[0]?.now_ms);
    return { row, now };
  };
  return {
    kind: 'sqlite',
    errors: sqliteErrors,
    ...tableParts(table, t, '"', true),
    inbox: sqliteInbox,
    steps: sqliteSteps,
    columns: { key: 'key', expires: 'expires_at', updated: 'updated_at', completed: '1' },
    purgeVersionsAction: 'purge expired keys',
    localClock: true,
    calls: {
      ...keyedCalls(s),
      extend: (lease, leaseMs) => [s.extend, [leaseMs, storeKey(lease.key), lease.token]],
      confirmOwn: (lease, retentionMs) => [s.confirmOwn, [retentionMs, storeKey(lease.key), lease.token]],
      saveStep: (lease, name, value) => [s.saveStep, [name, value, storeKey(lease.key), lease.token]],
    },
    claimRound({ key, token, leaseMs, fingerprint, graceMs }, { exec, locked }) {
      const stored = storeKey(key);
      const fp = fingerprint ?? null;
      return () =>
        then(exec('claim a key', [s.insert, [stored, token, fp, leaseMs, graceMs]]), ({ rows }) => {
          if (rows[0]) return { acquired: true, attempt: 1, expiresMs: Number(rows[0].expires_at) };
          return locked(() => {
            const { row, now } = found(exec, 'claim a key', stored);
            // Live; or a takeable row (released: no token; or its lease ran out) of another
            // fingerprint, which keeps it.
            const held =
              row &&
              heldBy(
                {
                  live: Number(row.expires_at) > now && row.token !== '',
                  completed: Number(row.state) === 1,
                  attempt: Number(row.attempt),
                  expiresMs: Number(row.expires_at),
                  fingerprint: (row.fingerprint as string | null) ?? undefined,
                },
                fingerprint,
              );
            if (held) return held;
            // Absent, released or ran out: a lease is taken over with attempt + 1, a completed key
            // whose retention ran out starts over at 1.
            const attempt = row && Number(row.state) === 0 ? Number(row.attempt) + 1 : 1;
            const expiresMs = now + leaseMs;
            sync(exec('claim a key', [s.put, [stored, 0, token, attempt, fp, expiresMs, now, graceMs]]));
            return { acquired: true, attempt, expiresMs };
          });
        });
    },
    confirm(lease, retentionMs, { exec, locked }) {
      const stored = storeKey(lease.key);
      return locked(() => {
        const { row, now } = found(exec, 'confirm a lease', stored);
        // Ours, or nobody's: vanished, or a completed key whose retention ran out. The work is
        // done, so it is written completed and a retry sees a duplicate.
        const ours =
          !row || row.token === lease.token || (Number(row.state) === 1 && Number(row.expires_at) <= now);
        if (!ours) return false;
        const { token, attempt } = lease;
        const values = [stored, 1, token, attempt, lease.fingerprint ?? null, now + retentionMs, now, 0];
        sync(exec('confirm a lease', [s.put, values]));
        return true;
      });
    },
  };
}
