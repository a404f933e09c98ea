/**
 * How the MySQL store runs a statement on a `mysql2/promise` client: prepared (`execute`) unless
 * told otherwise, run again after a deadlock or a lock wait timeout, in turn on a lone Connection;
 * and how it creates its tables and runs the inbox's transactions.
 */

import { ConfigError } from '../../errors.js';
import type { SqlInboxDriver, SqlInboxQuery } from '../sql-inbox.js';
import { oncePerClient, type SqlFaults } from './core.js';
import { ddl, errno } from './mysql-dialect.js';
import { upgradeSteps } from './steps.js';
import type { Row, SqlDialect, SqlDriver, SqlOutcome } from './types.js';

/** What the store needs of a mysql2 client (the entry file's `MysqlQueryable`). */
interface MysqlLike {
  query(sql: string, values?: any): Promise<[any, any]>;
  execute?(sql: string, values?: any): Promise<[any, any]>;
}

interface Result {
  rows: Row[];
  affectedRows: number;
  insertId: number;
}

export function isQueryable(client: unknown): client is MysqlLike {
  return (
    typeof client === 'object' &&
    client !== null &&
    typeof (client as { query?: unknown }).query === 'function'
  );
}

async function runOn(client: MysqlLike, sql: string, values: unknown[], prepare = false): Promise<Result> {
  const [result] =
    prepare && typeof client.execute === 'function'
      ? await client.execute(sql, values)
      : await client.query(sql, values);
  if (Array.isArray(result)) return { rows: result as Row[], affectedRows: 0, insertId: 0 };
  const header = (result ?? {}) as { affectedRows?: unknown; insertId?: unknown };
  return { rows: [], affectedRows: Number(header.affectedRows ?? 0), insertId: Number(header.insertId ?? 0) };
}

/** A result as the store reads it: each statement says what it did through LAST_INSERT_ID(expr). */
const outcome = (r: Result): SqlOutcome => ({
  rows: r.rows,
  count: r.affectedRows,
  done: r.insertId > 0,
  id: r.insertId,
});

/** Errors after which the server rolled back the whole statement, so running it again is safe. */
const retriable = new Set([
  1213, // ER_LOCK_DEADLOCK
  1205, // ER_LOCK_WAIT_TIMEOUT
  1020, // ER_CHECKREAD (MariaDB innodb_snapshot_isolation): record changed since last read
]);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A Connection (not a pool) runs one transaction at a time, and a statement sent while one is open
 * runs inside it (undone by its rollback): on a lone Connection every statement of the stores over
 * it, and every inbox transaction as a whole, take their turn here.
 */
const connectionQueues = new WeakMap<object, Promise<unknown>>();

/** Tables created per client and table, so many store objects over one pool run the DDL once. */
const created = new WeakMap<object, Map<string, Promise<void>>>();

const ER_NO_SUCH_TABLE = 1146;

export interface MysqlDriverOptions {
  readonly client: MysqlLike;
  readonly table: string;
  readonly autoCreate: boolean;
  readonly retries: number;
  readonly prepare: boolean;
  readonly dialect: SqlDialect;
  readonly unavailable: SqlFaults;
}

/** The driver of a MySQL store over `client` (already checked by {@link isQueryable}). */
export function mysqlDriver(o: MysqlDriverOptions): SqlDriver {
  const { client, prepare } = o;
  const t = o.dialect.names;

  async function withRetry<T>(fn: () => Promise<T>): Promise<T> {
    for (let round = 0; ; round++) {
      try {
        return await fn();
      } catch (err) {
        if (round >= o.retries || !retriable.has(errno(err) ?? 0)) throw err;
        // Jittered backoff, so the two sides of a deadlock do not collide again in lockstep.
        await sleep(Math.random() * 5 * 2 ** round);
      }
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
      if (!(await tablesExist())) {
        for (const statement of ddl(t)) await withRetry(() => runOn(client, statement, []));
      }
      // A keys table made by an older onceonly has no steps column.
      await upgradeSteps(o.dialect.steps, o.dialect.errors, t.keys, (text) => runOn(client, text, []));
    } catch (err) {
      throw o.unavailable(`create its tables ${t.keys} and ${t.versions}`, err, true);
    }
  }

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

  return {
    client,
    run: async (statement, values) =>
      outcome(
        await inTurn(() =>
          withRetry(() => runOn(client, statement.text, values, prepare && !statement.unprepared)),
        ),
      ),
    locked: (fn) => fn(),
    ready: () => (o.autoCreate ? oncePerClient(created, client, o.table, createTables) : Promise.resolve()),
    joining(tx) {
      if (!isQueryable(tx)) {
        throw new ConfigError(
          'invalid_option',
          'onceonly: record() tx must be a mysql2 connection inside a transaction, kyselyTx(trx) or drizzleTx(tx, sql)',
        );
      }
      return async (statement, values) => outcome(await runOn(tx, statement.text, values, prepare));
    },
    /**
     * The server's clock (`UNIX_TIMESTAMP(NOW(3))`, whatever the session's time zone), and the
     * tables present (looked up, never created).
     */
    async health(names) {
      const { rows } = await inTurn(() =>
        runOn(client, 'SELECT UNIX_TIMESTAMP(NOW(3)) * 1000 AS now_ms', []),
      );
      const tables: Record<string, boolean> = {};
      for (const name of names) tables[name] = await tablePresent(name);
      return { nowMs: Number(rows[0]?.now_ms), tables };
    },
    inbox: inboxDriver(client, o.dialect.inboxNames.table, prepare, inTurn, withRetry),
  };
}

/** The inbox's driver calls: MySQL's take is a SELECT ... FOR UPDATE SKIP LOCKED and an UPDATE in one transaction. */
function inboxDriver(
  client: MysqlLike,
  table: string,
  prepare: boolean,
  inTurn: <T>(run: () => Promise<T>) => Promise<T>,
  withRetry: <T>(fn: () => Promise<T>) => Promise<T>,
): SqlInboxDriver {
  const asResult = async (pending: Promise<Result>, rows: boolean) => {
    const r = await pending;
    return { rows: r.rows, changes: rows ? r.rows.length : r.affectedRows };
  };
  return {
    query: (statement, values) =>
      asResult(
        inTurn(() => withRetry(() => runOn(client, statement.text, values, prepare))),
        statement.rows,
      ),
    transaction<T>(fn: (query: SqlInboxQuery) => Promise<T>): Promise<T> {
      const pool = client as { getConnection?: () => Promise<MysqlLike & { release(): void }> };
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
        await runOn(client, `SELECT 1 FROM ${table} LIMIT 0`, []);
        return true;
      } catch {
        return false;
      }
    },
    async create(statements) {
      for (const statement of statements) await withRetry(() => runOn(client, statement, []));
    },
  };
}
