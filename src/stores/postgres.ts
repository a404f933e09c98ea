/**
 * `onceonly/postgres`: a store over PostgreSQL (9.5 or later) for a `pg` Pool, PoolClient or Client,
 * or a `postgres` (postgres.js) instance. The store imports no driver: it talks to the client you
 * already have through the small structural interfaces below.
 *
 * Every state change is one SQL statement, and all time is the server's `clock_timestamp()`.
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
import { inboxDdl, inboxNames, type SqlInboxDialect, sqlInbox } from './sql-inbox.js';

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
  /** Creates the tables now instead of on first use (a no-op after the first success). */
  ready(): Promise<void>;
  /** The (quoted) table names the store uses. */
  readonly tables: { readonly keys: string; readonly versions: string };
  /**
   * The inbox for receivers in inbox mode, in `<table>_inbox` (created on first use unless
   * `autoCreate: false`; see {@link postgresInboxMigration} and "Inbox" in docs/postgres.md).
   */
  readonly inbox: InboxStore;
}

const DEFAULT_TABLE = 'onceonly';

function postgresTables(table: string): TableNames & { lockName: string } {
  return {
    ...tableNames(table, { store: 'postgresStore', qualifier: 'schema', quote: '"', maxLength: 54 }),
    lockName: `onceonly:${table}`,
  };
}

function ddl(t: TableNames): string {
  return `CREATE TABLE IF NOT EXISTS ${t.keys} (
  key text PRIMARY KEY,
  state text NOT NULL CHECK (state IN ('processing', 'completed')),
  token text NOT NULL,
  attempt integer NOT NULL,
  fingerprint text,
  expires_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  grace_ms bigint NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS ${t.index} ON ${t.keys} (expires_at);
CREATE TABLE IF NOT EXISTS ${t.versions} (
  entity text PRIMARY KEY,
  version double precision NOT NULL,
  updated_at timestamptz NOT NULL
);
`;
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
  postgresTables(table);
  return `${inboxDdl(postgresInbox, inboxNames(table, '"', false)).join(';\n')};\n`;
}

/** The server's clock (`clock_timestamp()`) in ms since the epoch. */
const PG_NOW_MS = '(floor(extract(epoch FROM clock_timestamp()) * 1000)::int8)';

/** All statements, built once per table. `$n` placeholders; the ms amounts are cast explicitly. */
function statements(t: TableNames & { lockName: string }) {
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
    grace_ms = excluded.grace_ms
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
  updated_at = clock_timestamp()
WHERE r.token = excluded.token
RETURNING 1 AS ok`,

    // Released: no owner (empty token), the lease ends now; attempt, fingerprint and grace stay.
    release: `UPDATE ${t.keys} AS r SET token = '', expires_at = c.now, updated_at = c.now
FROM (SELECT clock_timestamp() AS now) AS c
WHERE r.key = $1 AND r.token = $2 AND r.state = 'processing' RETURNING 1 AS ok`,

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
  updated_at = clock_timestamp()
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

type StatementName = keyof ReturnType<typeof statements>;

/** Runs one statement on a client: rows back, and the number of affected rows when the driver says. */
type Runner = (
  statement: string,
  text: string,
  values: unknown[],
) => Promise<{ rows: Row[]; count: number | undefined }>;

function isPostgresJs(client: unknown): client is PostgresJsSql {
  return typeof client === 'function' && typeof (client as { unsafe?: unknown }).unsafe === 'function';
}

function isPg(client: unknown): client is PgQueryable {
  return (
    typeof client === 'object' &&
    client !== null &&
    typeof (client as { query?: unknown }).query === 'function'
  );
}

function runnerFor(client: unknown, prepare: boolean, what: string): Runner {
  if (isPostgresJs(client)) {
    return async (_statement, text, values) => {
      const simple = values.length === 0;
      const rows = (await client.unsafe(text, values, { prepare: prepare && !simple })) as readonly Row[] & {
        count?: number;
      };
      return { rows: Array.isArray(rows) ? [...rows] : [], count: rows.count };
    };
  }
  if (isPg(client)) {
    return async (statement, text, values) => {
      const result = (await client.query(
        prepare && values.length > 0
          ? { name: statementName(statement, text), text, values }
          : { text, values },
      )) as { rows?: Row[]; rowCount?: number | null };
      return { rows: Array.isArray(result.rows) ? result.rows : [], count: result.rowCount ?? undefined };
    };
  }
  throw new ConfigError(
    'invalid_option',
    `onceonly: ${what} must be a pg Pool, PoolClient or Client, a postgres.js sql instance, kyselyTx(trx) or drizzleTx(tx, sql)`,
  );
}

const names = new Map<string, string>();
/** Named prepared statements must not share a name with another text on one connection. */
function statementName(statement: string, text: string): string {
  let name = names.get(text);
  if (!name) {
    name = `onceonly_${statement}_${createHash('sha256').update(text).digest('hex').slice(0, 16)}`;
    names.set(text, name);
  }
  return name;
}

/** Tables created per client and table, so many store objects over one pool run the DDL once. */
const created = new WeakMap<object, Map<string, Promise<void>>>();

/** SQLSTATEs of two sessions creating the same table at once without our advisory lock. */
const creationRaces = new Set(['23505', '42P07', '42710']);

/** A SQLSTATE is five digits or capitals; a driver's own `code` (ECONNREFUSED) is something else. */
function sqlState(err: unknown): string | undefined {
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
const pgErrors: SqlErrorDialect = {
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
 * The inbox in PostgreSQL's words: `FOR UPDATE SKIP LOCKED` in the take's subquery (concurrent
 * takers skip each other's rows instead of waiting), `UPDATE ... RETURNING`, bytea bodies.
 */
const postgresInbox: SqlInboxDialect = {
  errors: { ...pgErrors, migration: 'postgresInboxMigration' },
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
  deleteLimit: false,
};

const toNumber = (v: unknown): number => Number(v);
const toOptionalString = (v: unknown): string | undefined => (v == null ? undefined : String(v));

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
  const t = postgresTables(table);
  const sql = statements(t);
  const unavailable = (action: string, err: unknown, setup = false) =>
    sqlStoreError(
      pgErrors,
      { action, setup, autoCreate, table, names: t, defaultTable: table === DEFAULT_TABLE },
      err,
    );

  async function createTables(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const { rows } = await run('exists', sql.exists, [t.keys, t.versions]);
        if (rows[0]?.ok === true) return;
        await run('ensure', sql.ensure, []);
        return;
      } catch (err) {
        // Someone else's CREATE (a migration without our lock) won the race: ours now finds the table.
        if (attempt < 3 && creationRaces.has(sqlState(err) ?? '')) continue;
        throw unavailable(`create its tables ${t.keys} and ${t.versions}`, err, true);
      }
    }
  }

  function ready(): Promise<void> {
    if (!autoCreate) return Promise.resolve();
    const key = client as object;
    let perClient = created.get(key);
    if (!perClient) {
      perClient = new Map();
      created.set(key, perClient);
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

  async function exec(
    action: string,
    statement: StatementName,
    values: unknown[],
    runner: Runner = run,
  ): Promise<{ rows: Row[]; count: number | undefined }> {
    await ready();
    try {
      return await runner(statement, sql[statement], values);
    } catch (err) {
      // Inside the caller's transaction the driver's error goes through unchanged, so the caller's
      // own retry logic still sees a serialization failure (40001) or a deadlock (40P01) as such.
      if (runner !== run) throw err;
      throw unavailable(action, err);
    }
  }

  const inboxTables = inboxNames(table, '"', false);
  const inbox = sqlInbox({
    dialect: postgresInbox,
    names: inboxTables,
    table,
    defaultTable: table === DEFAULT_TABLE,
    autoCreate,
    store: 'postgresStore',
    driver: {
      async query(statement, values) {
        const { rows, count } = await run(statement.name, statement.text, values);
        return { rows, changes: statement.rows ? rows.length : (count ?? 0) };
      },
      async exists() {
        const { rows } = await run('inbox_exists', 'SELECT to_regclass($1::text) IS NOT NULL AS ok', [
          inboxTables.table,
        ]);
        return rows[0]?.ok === true;
      },
      async create(ddl) {
        // One simple query, one implicit transaction: the advisory lock serialises first uses.
        const text = `SET LOCAL client_min_messages = warning;
SELECT pg_advisory_xact_lock(hashtext('${t.lockName}'));
${ddl.join(';\n')};`;
        for (let attempt = 1; ; attempt++) {
          try {
            await run('inbox_create', text, []);
            return;
          } catch (err) {
            if (attempt < 3 && creationRaces.has(sqlState(err) ?? '')) continue;
            throw err;
          }
        }
      },
    },
  });

  return markBuiltin('postgres', client as object, t.keys, {
    tables: { keys: t.keys, versions: t.versions },
    ready,
    inbox,

    /**
     * Reachable, the server's clock, and the store's tables present (looked up, never created):
     * the inbox's too when the caller uses it.
     */
    async health(scope?: HealthScope): Promise<StoreHealth> {
      const withInbox = scope?.inbox === true;
      const { rows } = await run('health', sql.health, [
        t.keys,
        t.versions,
        withInbox ? inboxTables.table : t.keys,
      ]);
      const row = rows[0] ?? {};
      return sqlHealth(
        Number(row.now_ms),
        {
          [t.keys]: row.has_keys,
          [t.versions]: row.has_versions,
          ...(withInbox ? { [inboxTables.table]: row.has_inbox } : {}),
        },
        autoCreate,
      );
    },

    async claim(key: string, { leaseMs, fingerprint, retentionMs }: ClaimOptions): Promise<Claim> {
      const token = newToken();
      const stored = storeKey(key);
      // A loser whose snapshot showed no row, or an expired one, lost to a write that committed after
      // its snapshot; the next statement sees that write. Repeats only while the key keeps changing.
      for (let round = 1; round <= 10; round++) {
        const { rows } = await exec('claim a key', 'claim', [
          stored,
          token,
          fingerprint ?? null,
          leaseMs,
          retentionMs ?? 0,
        ]);
        const row = rows[0];
        if (row?.state === 'acquired') {
          return {
            status: 'acquired',
            lease: createLease({
              key,
              token,
              attempt: toNumber(row.attempt),
              fingerprint,
              expiresAt: new Date(toNumber(row.expires)),
            }),
          };
        }
        const same = row && sameFingerprint(toOptionalString(row.fingerprint), fingerprint);
        // Live; or (in the snapshot, which explains why nothing was written) a takeable row of
        // another fingerprint, which keeps it.
        if (row?.live === true || (row?.state === 'processing' && !same)) {
          if (row.state === 'completed') return { status: 'completed', sameFingerprint: same === true };
          return {
            status: 'in-flight',
            attempt: toNumber(row.attempt),
            expiresAt: new Date(toNumber(row.expires)),
            sameFingerprint: same === true,
          };
        }
      }
      throw new StoreUnavailableError(
        `onceonly: PostgreSQL store could not claim "${key}": it changed under every one of 10 tries; retry the delivery later`,
      );
    },

    async confirm(lease: Lease, { retentionMs }: { retentionMs: number }): Promise<boolean> {
      // No real token is empty: '' marks a released row, which nobody owns.
      if (lease.token === '') return false;
      const { rows } = await exec('confirm a lease', 'confirm', [
        storeKey(lease.key),
        lease.token,
        lease.attempt,
        lease.fingerprint ?? null,
        retentionMs,
      ]);
      return rows.length > 0;
    },

    async release(lease: Lease): Promise<boolean> {
      if (lease.token === '') return false;
      const { rows } = await exec('release a lease', 'release', [storeKey(lease.key), lease.token]);
      return rows.length > 0;
    },

    async extend(lease: Lease, { leaseMs }: { leaseMs: number }): Promise<boolean> {
      if (lease.token === '') return false;
      const { rows } = await exec('extend a lease', 'extend', [storeKey(lease.key), lease.token, leaseMs]);
      return rows.length > 0;
    },

    async record(
      key: string,
      { retentionMs, fingerprint, tx }: RecordOptions,
    ): Promise<{ duplicate: boolean }> {
      const runner = tx === undefined ? run : runnerFor(tx, prepare, 'record() tx');
      const { rows } = await exec(
        'record a key',
        'record',
        [storeKey(key), newToken(), fingerprint ?? null, retentionMs],
        runner,
      );
      return { duplicate: rows.length === 0 };
    },

    async advance(entity: string, version: number): Promise<boolean> {
      assertVersion(version);
      const { rows } = await exec('advance a version', 'advance', [storeKey(entity), version]);
      return rows.length > 0;
    },

    async inspect(key: string): Promise<RecordView | undefined> {
      const { rows } = await exec('read a key', 'inspect', [storeKey(key)]);
      const row = rows[0];
      if (!row) return undefined;
      return {
        key,
        state: row.state === 'completed' ? 'completed' : row.released === true ? 'released' : 'processing',
        attempt: toNumber(row.attempt),
        fingerprint: toOptionalString(row.fingerprint),
        expiresAt: new Date(toNumber(row.expires)),
        updatedAt: new Date(toNumber(row.updated)),
      };
    },

    async stats(): Promise<StoreStats> {
      const { rows } = await exec('count keys', 'stats', []);
      const row = rows[0] ?? {};
      return {
        processing: toNumber(row.processing ?? 0),
        takeable: toNumber(row.takeable ?? 0),
        completed: toNumber(row.completed ?? 0),
      };
    },

    async oldestLeases(limit: number): Promise<RecordView[]> {
      const { rows } = await exec('list leases', 'oldest', [limit]);
      return rows.map((row) => ({
        key: String(row.key),
        state: row.released === true ? ('released' as const) : ('processing' as const),
        attempt: toNumber(row.attempt),
        fingerprint: toOptionalString(row.fingerprint),
        expiresAt: new Date(toNumber(row.expires)),
        updatedAt: new Date(toNumber(row.updated)),
      }));
    },

    async purgeExpired(purge: PurgeOptions = {}): Promise<number> {
      const { graceMs: grace, batch, unusedMs } = purgeSettings(purge);
      let deleted = 0;
      for (;;) {
        const { count } = await exec('purge expired keys', 'purge', [grace, batch]);
        deleted += count ?? 0;
        if ((count ?? 0) < batch) break;
      }
      if (unusedMs !== undefined) {
        for (;;) {
          const { count } = await exec('purge old versions', 'purgeVersions', [unusedMs, batch]);
          deleted += count ?? 0;
          if ((count ?? 0) < batch) break;
        }
      }
      return deleted;
    },

    async close(): Promise<void> {},
  });
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

let kyselyQueries = 0;

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
  return {
    async query({ text, values = [] }) {
      // A compiled raw query, the same object Kysely's `CompiledQuery.raw(text, values)` builds.
      const result = await trx.executeQuery({
        sql: text,
        parameters: values,
        query: { kind: 'RawNode', sqlFragments: [text], parameters: [] },
        queryId: { queryId: `onceonly-${++kyselyQueries}` },
      });
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
  requireDrizzleTx(tx, sql, 'execute', 'db.transaction(async (tx) => ...) from Drizzle');
  return {
    async query({ text, values = [] }) {
      const result = await tx.execute(drizzleStatement(sql, text, values, 'dollar'));
      const rows = Array.isArray(result) ? result : ((result as { rows?: unknown[] }).rows ?? []);
      return { rows: rows as Row[] };
    },
  };
}
