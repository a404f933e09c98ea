/**
 * How the PostgreSQL store runs a statement on a `pg` client (named prepared statements) or a
 * postgres.js `sql` (prepared queries), creates its tables under an advisory lock, and serves the
 * inbox.
 */

import { createHash } from 'node:crypto';
import { ConfigError } from '../../errors.js';
import type { WatchChannel } from '../inbox-watch.js';
import type { SqlInboxDriver } from '../sql-inbox.js';
import { oncePerClient, type SqlFaults } from './core.js';
import { creationRaces, inboxChannel, type postgresDialect, sqlState } from './postgres-dialect.js';
import { upgradeSteps } from './steps.js';
import type { Row, SqlDriver, SqlOutcome } from './types.js';

/** Runs one statement on a client: rows back, and the number of affected rows when the driver says. */
export type Runner = (
  statement: string,
  text: string,
  values: unknown[],
) => Promise<{ rows: Row[]; count: number | undefined }>;

interface PgLike {
  query(config: { text: string; values?: unknown[]; name?: string }): Promise<unknown>;
}

interface PostgresJsLike {
  unsafe(query: string, parameters?: any[], options?: { prepare?: boolean }): PromiseLike<unknown>;
}

function isPostgresJs(client: unknown): client is PostgresJsLike {
  return typeof client === 'function' && typeof (client as { unsafe?: unknown }).unsafe === 'function';
}

function isPg(client: unknown): client is PgLike {
  return (
    typeof client === 'object' &&
    client !== null &&
    typeof (client as { query?: unknown }).query === 'function'
  );
}

/**
 * A postgres.js `sql` made with a column-name transform (`transform: postgres.camel`, `toPascal`,
 * `toKebab`, or a function of the user's) renames every column a statement returns: `entry_key`
 * comes back as `entryKey`. The store reads its rows by the names its statements give, so this puts
 * them back: the names a statement's text could return (every identifier in it, folded to lower case
 * as the server folds them) are passed through the transform once per text, and the rows' keys it
 * changed get the name as written too (rows of the store's own, in place). Undefined for a client
 * without such a transform.
 */
function columnNames(client: unknown): ((text: string, rows: Row[]) => Row[]) | undefined {
  const options = (client as { options?: { transform?: { column?: { from?: unknown } } } }).options;
  const from = options?.transform?.column?.from;
  if (typeof from !== 'function') return undefined;
  const renamesOf = new Map<string, [string, string][]>();
  return (text, rows) => {
    let renames = renamesOf.get(text);
    if (renames === undefined) {
      renames = [];
      for (const name of new Set(text.toLowerCase().match(/[a-z_][a-z0-9_]*/g))) {
        // Every identifier goes through it (keywords and table names too): one it throws on
        // (postgres.camel on a name ending in `_`) is no column the store reads, and is skipped.
        let shown: string;
        try {
          shown = String(from(name));
        } catch {
          continue;
        }
        if (shown !== name) renames.push([shown, name]);
      }
      // The store's texts are a fixed few (a table's statements); the bound only guards the map.
      if (renamesOf.size >= 1_000) renamesOf.clear();
      renamesOf.set(text, renames);
    }
    for (const row of rows) for (const [shown, name] of renames) if (shown in row) row[name] = row[shown];
    return rows;
  };
}

/** How statements run on `client`: a ConfigError (naming it `what`) when it is no client we know. */
export function runnerFor(client: unknown, prepare: boolean, what: string): Runner {
  if (isPostgresJs(client)) {
    const names = columnNames(client);
    return async (_statement, text, values) => {
      const simple = values.length === 0;
      const rows = (await client.unsafe(text, values, { prepare: prepare && !simple })) as readonly Row[] & {
        count?: number;
      };
      const list = Array.isArray(rows) ? [...rows] : [];
      return { rows: names ? names(text, list) : list, count: rows.count };
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

/** A `pg` Pool: the Client class it makes its connections with, and their options. */
interface PgPoolLike {
  readonly Client: new (options: unknown) => PgListener;
  readonly options: object;
  connect(): unknown;
}

/** A `pg` Client as the watch uses it. */
interface PgListener {
  connect(): Promise<unknown>;
  query(text: string): Promise<unknown>;
  end(): Promise<unknown>;
  on(event: 'notification', listener: (message: { channel: string; payload?: string }) => void): unknown;
  on(event: 'error' | 'end', listener: (error?: unknown) => void): unknown;
}

interface PostgresJsListen {
  listen(
    channel: string,
    onNotify: (payload: string) => void,
    onListen?: () => void,
  ): Promise<{ unlisten(): Promise<unknown> }>;
}

/**
 * The inbox's watch connection on `client`: for a `pg` Pool, a connection of its own, made as the
 * pool makes its connections but outside it (it never takes one of the pool's), which LISTENs on
 * `channel` until closed; for postgres.js, its `listen` (one connection per `sql` instance, which
 * it opens again and re-LISTENs on by itself after a drop, until `sql.end()`). A pg Client,
 * PoolClient or transaction has no watch: the workers poll.
 */
export function postgresWatch(client: object, channel: string): WatchChannel | undefined {
  const pool = client as Partial<PgPoolLike>;
  if (typeof pool.Client === 'function' && typeof pool.options === 'object' && pool.options !== null) {
    const Client = pool.Client;
    const options = pool.options;
    return {
      async open(heard, lost) {
        const listener = new Client(options);
        let closing = false;
        let ended = false;
        const drop = (error: unknown) => {
          if (closing || ended) return;
          ended = true;
          lost(error ?? new Error('onceonly: the inbox watch connection ended'));
        };
        // Without an 'error' listener a dropped connection's error would end the process.
        listener.on('error', drop);
        listener.on('end', () => drop(undefined));
        listener.on('notification', (message) => {
          if (message.channel === channel) heard(message.payload ?? '');
        });
        const close = async () => {
          if (closing) return;
          closing = true;
          await listener.end().catch(() => undefined);
        };
        try {
          await listener.connect();
          await listener.query(`LISTEN "${channel}"`);
        } catch (error) {
          await close();
          throw error;
        }
        return close;
      },
    };
  }
  if (isPostgresJs(client) && typeof (client as Partial<PostgresJsListen>).listen === 'function') {
    const sql = client as unknown as PostgresJsListen;
    return {
      async open(heard) {
        let listened = false;
        const { unlisten } = await sql.listen(channel, heard, () => {
          // Each re-LISTEN after a drop (postgres.js's own): what was accepted meanwhile.
          if (listened) heard(undefined);
          listened = true;
        });
        return async () => {
          await unlisten().catch(() => undefined);
        };
      },
    };
  }
  return undefined;
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

/** A runner's answer as the store reads it: done when a row came back (`RETURNING 1 AS ok`). */
const outcome = ({ rows, count }: { rows: Row[]; count: number | undefined }): SqlOutcome => ({
  rows,
  count: count ?? 0,
  done: rows.length > 0,
  id: 0,
});

export interface PostgresDriverOptions {
  readonly client: object;
  /** How statements run on the client (from {@link runnerFor}). */
  readonly run: Runner;
  readonly prepare: boolean;
  readonly table: string;
  readonly autoCreate: boolean;
  readonly dialect: ReturnType<typeof postgresDialect>;
  readonly unavailable: SqlFaults;
}

/** The driver of a PostgreSQL store over `client` (already checked by {@link runnerFor}). */
export function postgresDriver(o: PostgresDriverOptions): SqlDriver {
  const { client, run, prepare, table, dialect } = o;
  const t = dialect.names;
  const sql = dialect.sql;

  async function createTables(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const { rows } = await run('exists', sql.exists.text, [t.keys, t.versions]);
        if (rows[0]?.ok !== true) await run('ensure', sql.ensure.text, []);
        // A keys table made by an older onceonly has no steps column.
        await upgradeSteps(dialect.steps, dialect.errors, t.keys, (text) => run('steps_column', text, []));
        return;
      } catch (err) {
        // Someone else's CREATE (a migration without our lock) won the race: ours now finds the table.
        if (attempt < 3 && creationRaces.has(sqlState(err) ?? '')) continue;
        throw o.unavailable(`create its tables ${t.keys} and ${t.versions}`, err, true);
      }
    }
  }

  const inboxTable = dialect.inboxNames.table;
  const channel = inboxChannel(inboxTable);
  const inbox: SqlInboxDriver = {
    watch: postgresWatch(client, channel),
    notify: (receiver) => run('inbox_notify', 'SELECT pg_notify($1, $2)', [channel, receiver]),
    async query(statement, values) {
      const { rows, count } = await run(statement.name, statement.text, values);
      return { rows, changes: statement.rows ? rows.length : (count ?? 0) };
    },
    async exists() {
      const { rows } = await run('inbox_exists', 'SELECT to_regclass($1::text) IS NOT NULL AS ok', [
        inboxTable,
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
  };

  return {
    client,
    run: async (statement, values) => outcome(await run(statement.name, statement.text, values)),
    locked: (fn) => fn(),
    ready: () => (o.autoCreate ? oncePerClient(created, client, table, createTables) : Promise.resolve()),
    joining(tx) {
      const runner = runnerFor(tx, prepare, 'record() tx');
      return async (statement, values) => outcome(await runner(statement.name, statement.text, values));
    },
    async health(tables) {
      const [keys, versions, inboxTable] = tables as [string, string, string?];
      const { rows } = await run('health', sql.health.text, [keys, versions, inboxTable ?? keys]);
      const row = rows[0] ?? {};
      return {
        nowMs: Number(row.now_ms),
        tables: {
          [keys]: row.has_keys,
          [versions]: row.has_versions,
          ...(inboxTable === undefined ? {} : { [inboxTable]: row.has_inbox }),
        },
      };
    },
    inbox,
  };
}
