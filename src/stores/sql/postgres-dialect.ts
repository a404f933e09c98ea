/**
 * PostgreSQL's words for the SQL store (see core.ts): its tables, statements, errors and inbox, and
 * its claim: one statement that reads the row from its snapshot and inserts or takes over the lease.
 * All time is the server's `clock_timestamp()`.
 */

import { createHash } from 'node:crypto';
import { storeKey } from '../../core/keys.js';
import type { Lease } from '../../core/types.js';
import { outdatedTableFix, type SqlErrorDialect, type TableNames, tableList, tableNames } from '../sql.js';
import type { SqlInboxDialect } from '../sql-inbox.js';
import { then } from './awaitable.js';
import { heldBy, keyedCalls, named, tableParts, toText } from './core.js';
import type { SqlStepsDialect } from './steps.js';
import type { SqlDialect } from './types.js';

export function postgresTables(table: string): TableNames & { lockName: string } {
  return {
    ...tableNames(table, { store: 'postgresStore', qualifier: 'schema', quote: '"', maxLength: 54 }),
    lockName: `onceonly:${table}`,
  };
}

export function ddl(t: TableNames): string {
  return `CREATE TABLE IF NOT EXISTS ${t.keys} (
  key text PRIMARY KEY,
  state text NOT NULL CHECK (state IN ('processing', 'completed')),
  token text NOT NULL,
  attempt integer NOT NULL,
  fingerprint text,
  expires_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  grace_ms bigint NOT NULL DEFAULT 0,
  steps text
);
CREATE INDEX IF NOT EXISTS ${t.index} ON ${t.keys} (expires_at);
CREATE TABLE IF NOT EXISTS ${t.versions} (
  entity text PRIMARY KEY,
  version double precision NOT NULL,
  updated_at timestamptz NOT NULL
);
`;
}

/** The `steps` column: text holding a JSON object, merged as jsonb. */
export const pgSteps: SqlStepsDialect = {
  type: 'text',
  merge: (name, value) =>
    `(COALESCE(steps, '{}')::jsonb || jsonb_build_object(${name}::text, ${value}::text))::text`,
  missing: (err) => sqlState(err) === '42703', // undefined_column
  duplicate: (err) => sqlState(err) === '42701', // duplicate_column
};

/** The server's clock (`clock_timestamp()`) in ms since the epoch. */
const PG_NOW_MS = '(floor(extract(epoch FROM clock_timestamp()) * 1000)::int8)';

/** All statements, built once per table. `$n` placeholders; the ms amounts are cast explicitly. */
export function statements(t: TableNames & { lockName: string }) {
  const ms = (n: number) => `($${n}::float8 * interval '1 millisecond')`;
  const epochMs = (col: string) => `floor(extract(epoch FROM ${col}) * 1000)::int8`;
  const purgeable = `expires_at <= clock_timestamp() AND (state = 'completed'
    OR expires_at <= clock_timestamp() - (greatest(grace_ms::float8, $1::float8) * interval '1 millisecond'))`;
  // Whether an upsert may take over row `r`: released (empty token) or its lease or retention ran
  // out; a processing row keeps its fingerprint against another (either side NULL is no mismatch).
  const takeable = (r: string) => `(${r}.expires_at <= clock_timestamp() OR ${r}.token = '')
    AND (${r}.state = 'completed' OR ${r}.fingerprint IS NULL OR excluded.fingerprint IS NULL OR ${r}.fingerprint = excluded.fingerprint)`;
  return {
    // One statement: `found` reads the row from the statement's snapshot, `taken` inserts a new
    // lease or takes over one that ran out. Under READ COMMITTED, ON CONFLICT DO UPDATE locks the
    // newest version of the row and re-checks the WHERE on it, so of any number of concurrent claims
    // (first claims or takeovers) exactly one gets a row back. A loser whose snapshot cannot explain
    // its loss (the row appeared or changed after the snapshot) retries; see claim().
    // A row that is live in the snapshot is reported as it stands there, without attempting the
    // INSERT: a duplicate delivery then only reads (no row lock, no write). So is a takeable row
    // (released: empty token; or its lease ran out) of another fingerprint, which it keeps.
    claim: `WITH found AS (
  SELECT state, attempt, fingerprint, expires_at > clock_timestamp() AND token <> '' AS live, ${epochMs('expires_at')} AS expires
  FROM ${t.keys} WHERE key = $1
), taken AS (
  INSERT INTO ${t.keys} AS r (key, state, token, attempt, fingerprint, expires_at, updated_at, grace_ms)
  SELECT $1::text, 'processing', $2::text, 1, $3::text, clock_timestamp() + ${ms(4)}, clock_timestamp(), $5::float8::int8
  WHERE NOT EXISTS (SELECT 1 FROM found WHERE live OR (state = 'processing' AND fingerprint <> $3::text))
  ON CONFLICT (key) DO UPDATE SET
    state = 'processing',
    token = excluded.token,
    attempt = CASE WHEN r.state = 'processing' THEN r.attempt + 1 ELSE 1 END,
    fingerprint = excluded.fingerprint,
    expires_at = clock_timestamp() + ${ms(4)},
    updated_at = clock_timestamp(),
    grace_ms = excluded.grace_ms,
    steps = CASE WHEN r.state = 'processing' THEN r.steps END
  WHERE ${takeable('r')}
  RETURNING attempt, ${epochMs('expires_at')} AS expires
)
SELECT 'acquired' AS state, attempt, NULL::text AS fingerprint, true AS live, expires FROM taken
UNION ALL
SELECT state, attempt, fingerprint, live, expires FROM found WHERE NOT EXISTS (SELECT 1 FROM taken)`,

    // Owner-checked. The INSERT covers a record that vanished (its lease ran out and it was purged):
    // the work is done, so it is written completed. The same owner confirming again just renews. A
    // released row has no token, so it is nobody's to confirm.
    confirm: `INSERT INTO ${t.keys} AS r (key, state, token, attempt, fingerprint, expires_at, updated_at)
VALUES ($1, 'completed', $2, $3, $4, clock_timestamp() + ${ms(5)}, clock_timestamp())
ON CONFLICT (key) DO UPDATE SET
  state = 'completed',
  expires_at = clock_timestamp() + ${ms(5)},
  updated_at = clock_timestamp(),
  steps = NULL
WHERE r.token = excluded.token
RETURNING 1 AS ok`,

    // Released: no owner (empty token), the lease ends now; attempt, fingerprint and grace stay.
    release: `UPDATE ${t.keys} AS r SET token = '', expires_at = c.now, updated_at = c.now
FROM (SELECT clock_timestamp() AS now) AS c
WHERE r.key = $1 AND r.token = $2 AND r.state = 'processing' RETURNING 1 AS ok`,

    // Durable steps: the owner's save merges one name into the row's object (a takeover keeps them,
    // a new life of the key, confirm and record start them over).
    loadSteps: `SELECT steps FROM ${t.keys} WHERE key = $1`,
    saveStep: `UPDATE ${t.keys} SET steps = ${pgSteps.merge('$3', '$4')}
WHERE key = $1 AND token = $2 AND state = 'processing' RETURNING 1 AS ok`,

    extend: `UPDATE ${t.keys} SET expires_at = clock_timestamp() + ${ms(3)}, updated_at = clock_timestamp()
WHERE key = $1 AND token = $2 AND state = 'processing' RETURNING 1 AS ok`,

    // Claim and confirm in one statement. Inside a caller's transaction the inserted row stays
    // locked until it commits: a second transaction on the same key waits on that lock, then sees
    // the committed row (a duplicate) or, after a rollback, inserts its own.
    record: `INSERT INTO ${t.keys} AS r (key, state, token, attempt, fingerprint, expires_at, updated_at)
VALUES ($1, 'completed', $2, 1, $3, clock_timestamp() + ${ms(4)}, clock_timestamp())
ON CONFLICT (key) DO UPDATE SET
  state = 'completed',
  token = excluded.token,
  attempt = CASE WHEN r.state = 'processing' THEN r.attempt + 1 ELSE 1 END,
  fingerprint = excluded.fingerprint,
  expires_at = clock_timestamp() + ${ms(4)},
  updated_at = clock_timestamp(),
  steps = NULL
WHERE ${takeable('r')}
RETURNING 1 AS ok`,

    advance: `INSERT INTO ${t.versions} AS r (entity, version, updated_at)
VALUES ($1, $2::float8, clock_timestamp())
ON CONFLICT (entity) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at
WHERE r.version < excluded.version
RETURNING 1 AS ok`,

    stats: `SELECT
  count(*) FILTER (WHERE state = 'processing' AND expires_at > n.now AND token <> '') AS processing,
  count(*) FILTER (WHERE state = 'processing' AND (expires_at <= n.now OR token = '')) AS takeable,
  count(*) FILTER (WHERE state = 'completed' AND expires_at > n.now) AS completed
FROM ${t.keys}, (SELECT clock_timestamp() AS now) AS n`,
    oldest: `SELECT key, token = '' AS released, attempt, fingerprint, ${epochMs('expires_at')} AS expires, ${epochMs('updated_at')} AS updated
FROM ${t.keys} WHERE state = 'processing' ORDER BY expires_at LIMIT $1`,
    inspect: `SELECT state, token = '' AS released, attempt, fingerprint, ${epochMs('expires_at')} AS expires, ${epochMs('updated_at')} AS updated
FROM ${t.keys} WHERE key = $1 AND (state = 'processing' OR expires_at > clock_timestamp())`,

    // The outer WHERE repeats the conditions: under READ COMMITTED a row changed after the inner
    // SELECT (a takeover renewed it) is re-checked on its newest version and then kept. A takeable
    // row (released, or its lease ran out) stays for its claim's retention (grace_ms) or the purge's
    // leaseGraceMs past its lease's end, whichever is longer.
    purge: `DELETE FROM ${t.keys} WHERE key IN (
  SELECT key FROM ${t.keys}
  WHERE ${purgeable}
  LIMIT $2 FOR UPDATE SKIP LOCKED
) AND ${purgeable}`,

    purgeVersions: `DELETE FROM ${t.versions} WHERE entity IN (
  SELECT entity FROM ${t.versions} WHERE updated_at <= clock_timestamp() - ${ms(1)}
  LIMIT $2 FOR UPDATE SKIP LOCKED
) AND updated_at <= clock_timestamp() - ${ms(1)}`,

    // Checked first so that a role without CREATE on the schema (PostgreSQL 15 and later no longer
    // grant it on public) works once a migration made the tables.
    exists: `SELECT to_regclass($1::text) IS NOT NULL AND to_regclass($2::text) IS NOT NULL AS ok`,

    // health(): the server's clock and the tables, in one round trip (never creates anything).
    health: `SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now_ms,
  to_regclass($1::text) IS NOT NULL AS has_keys, to_regclass($2::text) IS NOT NULL AS has_versions,
  to_regclass($3::text) IS NOT NULL AS has_inbox`,

    // Simple-query protocol: the statements run in one implicit transaction, so the advisory lock
    // serialises concurrent first uses (CREATE TABLE IF NOT EXISTS alone can still collide on
    // pg_type when two sessions create at once) and SET LOCAL hides the "already exists" notices.
    ensure: `SET LOCAL client_min_messages = warning;
SELECT pg_advisory_xact_lock(hashtext('${t.lockName}'));
${ddl(t)}`,
  } as const;
}

/** SQLSTATEs of two sessions creating the same table at once without our advisory lock. */
export const creationRaces = new Set(['23505', '42P07', '42710']);

/** A SQLSTATE is five digits or capitals; a driver's own `code` (ECONNREFUSED) is something else. */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  // Five digits or capitals, but not Node's own five-letter errno codes (EPIPE, EPERM, EBUSY): a
  // broken pipe is the connection, not the server answering.
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !/^E[A-Z]{4}$/.test(code)
    ? code
    : undefined;
}

function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * What the store makes of PostgreSQL's errors: the SQLSTATEs that mean a misconfiguration or the
 * connection; any other is an error that may pass. An error without a SQLSTATE is the driver's own
 * (ECONNREFUSED, a lost connection, a connect timeout): the connection.
 */
export const pgErrors: SqlErrorDialect = {
  store: 'PostgreSQL',
  migration: 'postgresMigration',
  key: sqlState,
  shown(err) {
    const state = sqlState(err);
    return state ? `SQLSTATE ${state}` : errorCode(err);
  },
  codeless: 'unreachable',
  rules: [
    { code: '28P01', fault: 'store_auth_failed' }, // invalid_password
    // invalid_authorization_specification: no such role, a role without LOGIN, no pg_hba.conf entry
    { code: '28000', fault: 'store_auth_failed' },
    { code: '42501', fault: 'store_permission_denied' }, // insufficient_privilege
    { code: '42P01', fault: 'store_missing_table' }, // undefined_table
    { code: '42703', fault: 'store_missing_table', fix: outdatedTableFix }, // undefined_column
    {
      code: '3F000', // invalid_schema_name: the schema the tables belong in does not exist
      fault: 'store_missing_table',
      fix: ({ table }, migration) =>
        `${table.includes('.') ? `create the schema first (CREATE SCHEMA ${table.split('.')[0]})` : 'no schema on the search_path exists to create them in: create one, or fix search_path'}: autoCreate and ${migration} create tables, never schemas`,
    },
    { code: '3D000', fault: 'store_unknown_database' }, // invalid_catalog_name
    { code: /^08/, fault: 'unreachable' }, // connection_exception
    { code: '53300', fault: 'unreachable' }, // too_many_connections
    { code: /^57P0[1-3]$/, fault: 'unreachable' }, // admin_shutdown, crash_shutdown, cannot_connect_now
  ],
  fixes: {
    auth: 'the server refused the login: check the user name and password the client connects with, that the role exists and has LOGIN, and that pg_hba.conf admits it from this host',
    unknownDatabase: 'check the database name in the connection settings, or create that database',
    permission: (t, setup, migration) =>
      setup
        ? `the role the client logs in as may not look up or create the tables: create them once with ${migration} as a role that may (the store then only looks them up), or grant this role CREATE on the schema; either way it needs USAGE on the schema and SELECT, INSERT, UPDATE, DELETE on ${tableList(t)}`
        : `the role the client logs in as lacks a privilege on the store's tables: GRANT SELECT, INSERT, UPDATE, DELETE ON ${tableList(t, ', ')} TO that role (and USAGE on their schema)`,
    transient:
      "the server answered an error that may pass; if it persists, check the server's health and log",
  },
};

/**
 * The channel the inbox table's watchers LISTEN on: the table's name unquoted
 * (`billing.onceonly_inbox`: letters, digits, `_` and `.` only), or past PostgreSQL's 63 bytes its
 * first 46 characters, `:` and 16 hex digits of a hash of the whole.
 */
export function inboxChannel(inboxTable: string): string {
  const name = inboxTable.replace(/"/g, '');
  if (name.length <= 63) return name;
  return `${name.slice(0, 46)}:${createHash('sha256').update(name).digest('hex').slice(0, 16)}`;
}

/**
 * The inbox in PostgreSQL's words: `FOR UPDATE SKIP LOCKED` in the take's subquery (concurrent
 * takers skip each other's rows instead of waiting), `UPDATE ... RETURNING`, bytea bodies, and
 * `pg_notify` in a retry or requeue that makes an entry due (sent at commit, to the listeners).
 */
export const postgresInbox: SqlInboxDialect = {
  errors: { ...pgErrors, migration: 'postgresInboxMigration' },
  steps: pgSteps,
  placeholder: 'dollar',
  // A scalar subquery: read once per statement (an InitPlan), so `due_at <= now` bounds an index
  // scan. clock_timestamp() itself is volatile: compared per row, every take, purge and stats read
  // each entry not yet due (123 ms against 0.04 ms for an idle take over 100,000 of them).
  now: `(SELECT ${PG_NOW_MS})`,
  types: {
    key: 'text PRIMARY KEY',
    seq: 'bigserial',
    receiver: 'text',
    token: 'text',
    text: 'text',
    meta: 'text',
    bytes: 'bytea',
    int: 'integer',
    bigint: 'bigint',
  },
  tableSuffix: '',
  inlineIndexes: false,
  tokenOf: (marker, prefix) =>
    `(${marker} || lpad(to_hex(due_at), 13, '0') || ${prefix}::text || to_hex(seq))`,
  insertIgnore: { head: 'INSERT INTO', tail: '\nON CONFLICT (entry_key) DO NOTHING' },
  skipLocked: ' FOR UPDATE SKIP LOCKED',
  returning: true,
  acceptMany: 'returning',
  deleteLimit: false,
  // Still one statement, one round trip: the write, and one notification per row it left pending
  // and due (a retry later tells nobody). The payload is the receiver; equal payloads of one
  // transaction are sent once (a requeue of many entries).
  wake: (write, names) => `WITH w AS (${write}
RETURNING receiver, token, state, due_at)
SELECT CASE WHEN state = 0 AND token = '' AND due_at <= (SELECT ${PG_NOW_MS})
  THEN pg_notify('${inboxChannel(names.table)}', receiver) END AS woke FROM w`,
};

/** The statements of a store over `table`, named (the prepared statements' names hash them). */
export type PostgresStatements = ReturnType<typeof postgresStatements>;

function postgresStatements(t: TableNames & { lockName: string }) {
  return named(statements(t), (name) => ({ rows: name !== 'purge' && name !== 'purgeVersions' }));
}

/** PostgreSQL as a SQL store's dialect, for the `table` option (checked here). */
export function postgresDialect(table: string): SqlDialect & {
  readonly names: TableNames & { lockName: string };
  readonly sql: PostgresStatements;
} {
  const t = postgresTables(table);
  const s = postgresStatements(t);
  const id = (key: string) => storeKey(key);
  return {
    kind: 'postgres',
    errors: pgErrors,
    ...tableParts(table, t, '"', false),
    sql: s,
    inbox: postgresInbox,
    steps: pgSteps,
    columns: { key: 'key', expires: 'expires', updated: 'updated', completed: 'completed' },
    purgeVersionsAction: 'purge old versions',
    calls: {
      ...keyedCalls(s),
      extend: (lease, leaseMs) => [s.extend, [id(lease.key), lease.token, leaseMs]],
      saveStep: (lease, name, value) => [s.saveStep, [id(lease.key), lease.token, name, value]],
    },
    // A loser whose snapshot showed no row, or an expired one, lost to a write that committed after
    // its snapshot; the next statement sees that write. Repeats only while the key keeps changing.
    claimRound({ key, token, leaseMs, fingerprint, graceMs }, { exec }) {
      return () =>
        then(
          exec('claim a key', [s.claim, [id(key), token, fingerprint ?? null, leaseMs, graceMs]]),
          ({ rows }) => {
            const row = rows[0];
            const attempt = Number(row?.attempt);
            const expiresMs = Number(row?.expires);
            if (row?.state === 'acquired') return { acquired: true, attempt, expiresMs };
            // Live; or (in the snapshot, which explains why nothing was written) a takeable row of
            // another fingerprint, which keeps it.
            const found = {
              live: row?.live === true,
              completed: row?.state === 'completed',
              attempt,
              expiresMs,
              fingerprint: toText(row?.fingerprint),
            };
            return row && heldBy(found, fingerprint);
          },
        );
    },
    confirm: (lease: Lease, retentionMs, { exec }) =>
      then(
        exec('confirm a lease', [
          s.confirm,
          [id(lease.key), lease.token, lease.attempt, lease.fingerprint ?? null, retentionMs],
        ]),
        (r) => r.done,
      ),
  };
}
