/** Opens a store from a URL for the CLI: memory, a SQLite file, redis://, postgres://, mysql://. */

import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { RecordView, Store, StoreAdmin, StoreStats } from '../core/types.js';
import { UsageError } from './args.js';

export interface OpenedStore {
  store: Store;
  kind: 'memory' | 'sqlite' | 'redis' | 'postgres' | 'mysql';
  /** Shared by several processes (memory is not). */
  shared: boolean;
  /** Closes what was opened here (client and store). */
  close(): Promise<void>;
  /** Housekeeping where the store has it: rows past retention deleted. */
  purge?: () => Promise<number>;
  /** Overview for `inspect`: the store's own, or (Redis) a bounded SCAN of the prefix. */
  admin?: StoreAdmin;
  /** The store's clock in ms since the epoch, which decides live and expired (not this host's). */
  now(): Promise<number>;
  /**
   * Removes this key space with everything in it: the claim, version and inbox tables of a SQL
   * store, the keys under a Redis prefix. For a run's own key space (the demo's), never real data.
   */
  drop(): Promise<void>;
}

/** Keys read at most by a Redis overview, so `inspect` stays cheap on a big keyspace. */
const REDIS_SCAN_LIMIT = 100_000;

/**
 * `name` isolates this use (a table name or key prefix) so a demo never collides with real data.
 */
export async function openStore(
  url: string,
  name = 'onceonly',
  options: {
    /** Look, never create: no table or file is made (SQL `autoCreate: false`, SQLite file must exist). */
    existing?: boolean;
  } = {},
): Promise<OpenedStore> {
  const autoCreate = options.existing !== true;
  const scheme = /^([a-z0-9+]+):/i.exec(url)?.[1]?.toLowerCase();
  if (url === 'memory') return openMemory();
  if (scheme === 'redis' || scheme === 'rediss' || scheme === 'valkey') return openRedis(url, name);
  if (scheme === 'postgres' || scheme === 'postgresql') return openPostgres(url, name, autoCreate);
  if (scheme === 'mysql' || scheme === 'mariadb') return openMysql(url, name, autoCreate);
  if (scheme === 'sqlite' || scheme === 'file' || scheme === undefined)
    return openSqlite(url, scheme, name, autoCreate);
  throw new UsageError(
    `unknown store ${JSON.stringify(url)}: use memory, a SQLite file path, redis://, postgres:// or mysql://`,
  );
}

async function openMemory(): Promise<OpenedStore> {
  const { memoryStore } = await import('../stores/memory.js');
  const store = memoryStore({ maxEntries: 1_000_000 });
  return {
    store,
    kind: 'memory',
    shared: false,
    close: () => store.close(),
    now: async () => Date.now(),
    drop: async () => {},
  };
}

async function openRedis(url: string, name: string): Promise<OpenedStore> {
  const { createClient } = await load<typeof import('redis')>('redis');
  // Fail fast through an outage (docs/redis.md, Outages): no offline queue, a silent server
  // dropped after 1 s, and once connected, reconnecting for as long as Redis is away. The first
  // connection is not retried, so a CLI pointed at a server that is not there says so and ends.
  // The 'error' listener is required: without one a dropped connection ends the process.
  let connected = false;
  const client = createClient({
    url: url.replace(/^valkey:/, 'redis:'),
    disableOfflineQueue: true,
    pingInterval: 500,
    socket: {
      reconnectStrategy: (retries: number) => (connected ? Math.min(100 * 2 ** retries, 2_000) : false),
      socketTimeout: 1_000,
    },
  });
  client.on('error', (err: Error) => {
    // Before the first connection the error is thrown by connect() and reported once, there.
    if (connected) console.error(`onceonly: Redis connection: ${err.message}`);
  });
  await client.connect();
  connected = true;
  const { redisStore } = await import('../stores/redis.js');
  const prefix = `${name}:`;
  const store = redisStore({ client, prefix });
  // Live or ran out is decided on the server's clock, as the store decides it.
  const serverNow = async () => {
    const [seconds, micros] = (await client.sendCommand(['TIME'])) as unknown as [string, string];
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };
  return {
    store,
    admin: redisAdmin(client, store, prefix, serverNow),
    kind: 'redis',
    shared: true,
    now: serverNow,
    close: async () => {
      await store.close();
      await client.quit();
    },
    drop: async () => {
      for await (const batch of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) {
        const keys = batch as unknown as string[];
        if (keys.length > 0) await client.unlink(keys);
      }
    },
  };
}

/** The overview of a Redis store for `inspect`: a bounded SCAN of the prefix's claim keys. */
function redisAdmin(
  client: ReturnType<typeof import('redis').createClient>,
  store: Store,
  prefix: string,
  serverNow: () => Promise<number>,
): StoreAdmin {
  // Redis has no query over values: read each claim key of the prefix (at most REDIS_SCAN_LIMIT).
  const scan = async () => {
    const views: RecordView[] = [];
    let partial = false;
    for await (const batch of client.scanIterator({ MATCH: `${prefix}k:*`, COUNT: 1000 })) {
      for (const full of batch as unknown as string[]) {
        const view = await store.inspect(full.slice(prefix.length + 2));
        if (view) views.push(view);
      }
      if (views.length >= REDIS_SCAN_LIMIT) {
        partial = true;
        break;
      }
    }
    return { views, partial };
  };
  return {
    async stats(): Promise<StoreStats> {
      const now = await serverNow();
      const { views, partial } = await scan();
      const live = views.filter((v) => v.state === 'processing' && v.expiresAt.getTime() > now).length;
      // Released records and leases that ran out: a claim takes them over with attempt + 1.
      const takeable = views.filter((v) => v.state !== 'completed').length - live;
      const stats = { processing: live, takeable, completed: views.length - live - takeable };
      return partial ? { ...stats, partial: true } : stats;
    },
    async oldestLeases(limit: number): Promise<RecordView[]> {
      return (
        (await scan()).views
          .filter((v) => v.state !== 'completed')
          // Soonest expiry first, as the SQL stores order them: leases that ran out lead.
          .sort((a, b) => a.expiresAt.getTime() - b.expiresAt.getTime())
          .slice(0, limit)
      );
    },
  };
}

async function openPostgres(url: string, name: string, autoCreate: boolean): Promise<OpenedStore> {
  const pg = await load<typeof import('pg')>('pg');
  const Pool = pg.Pool ?? (pg as unknown as { default: typeof pg }).default.Pool;
  const pool = new Pool({ connectionString: url, max: 8 });
  const { postgresStore } = await import('../stores/postgres.js');
  const now = async () =>
    Number(
      (await pool.query('SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::int8 AS now')).rows[0]
        .now,
    );
  return sqlStore(
    'postgres',
    postgresStore({ client: pool, table: name, autoCreate }),
    now,
    () => pool.end(),
    (sql) => pool.query(sql),
    name,
  );
}

async function openMysql(url: string, name: string, autoCreate: boolean): Promise<OpenedStore> {
  const mysql = await load<typeof import('mysql2/promise')>('mysql2/promise');
  const pool = mysql.createPool({ uri: url.replace(/^mariadb:/, 'mysql:'), connectionLimit: 8 });
  const { mysqlStore } = await import('../stores/mysql.js');
  const now = async () => {
    const [rows] = await pool.query(
      "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000 AS now",
    );
    return Number((rows as { now: number | string }[])[0]!.now);
  };
  return sqlStore(
    'mysql',
    mysqlStore({ client: pool, table: name, autoCreate }),
    now,
    () => pool.end(),
    (sql) => pool.query(sql),
    name,
  );
}

async function openSqlite(
  url: string,
  scheme: string | undefined,
  name: string,
  autoCreate: boolean,
): Promise<OpenedStore> {
  const path = scheme ? url.replace(/^(sqlite|file):(\/\/)?/i, '') : url;
  const db = await openSqliteFile(path, !autoCreate);
  const { sqliteStore } = await import('../stores/sqlite.js');
  const table = name.replace(/[^a-z0-9_]/gi, '_');
  // SQLite's clock is this host's.
  return sqlStore(
    'sqlite',
    sqliteStore({ client: db as never, table, autoCreate, wal: autoCreate }),
    async () => Date.now(),
    () => db.close(),
    (sql) => db.exec(sql),
    table,
  );
}

/** What the CLI uses of a SQLite database, whichever client opened it. */
interface SqliteFile {
  exec(sql: string): unknown;
  close(): unknown;
}

/**
 * Node's own `node:sqlite` where the runtime has it (22.16 and later: the store needs its
 * isTransaction), else better-sqlite3 if it is installed; undefined when neither is there.
 */
async function sqliteClient(): Promise<((path: string) => SqliteFile) | undefined> {
  const builtin = await importQuietly('node:sqlite');
  // Before 22.16 its DatabaseSync has no isTransaction, which the store needs (it refuses one); a
  // database has it as its own property, so one in memory is asked.
  if (builtin && 'isTransaction' in new builtin.DatabaseSync(':memory:'))
    return (path) => new builtin.DatabaseSync(path);
  const better = await betterSqlite3();
  return better && ((path) => new better(path));
}

/**
 * better-sqlite3 where this package's own imports find it, else in the project of the working
 * directory (onceonly run by npx from its cache, in a project that has it).
 */
async function betterSqlite3(): Promise<(new (path: string) => SqliteFile) | undefined> {
  try {
    return (await import('better-sqlite3')).default as unknown as new (
      path: string,
    ) => SqliteFile;
  } catch {}
  try {
    return createRequire(join(process.cwd(), 'package.json'))('better-sqlite3');
  } catch {
    return undefined;
  }
}

/** Whether this process can open a SQLite file: the demo's default store is one when it can. */
export async function canOpenSqlite(): Promise<boolean> {
  return (await sqliteClient()) !== undefined;
}

async function openSqliteFile(path: string, mustExist: boolean): Promise<SqliteFile> {
  const open = await sqliteClient();
  if (!open)
    throw new UsageError(
      'a SQLite store needs Node.js 22.16 or later (node:sqlite) or the better-sqlite3 package: npm install better-sqlite3',
    );
  if (mustExist && !existsSync(path))
    throw new UsageError(`cannot open the SQLite file ${path}: no such file`);
  try {
    return open(path);
  } catch (error) {
    throw new UsageError(`cannot open the SQLite file ${path}: ${(error as Error).message}`);
  }
}

/**
 * `node:sqlite` if this runtime has it, without the ExperimentalWarning some lines print on its
 * first import (a line on every worker's stderr would read as a fault).
 */
async function importQuietly(
  builtin: 'node:sqlite',
): Promise<{ DatabaseSync: new (path: string) => SqliteFile } | undefined> {
  const emit = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === 'string' ? warning : warning.message;
    if (!/SQLite is an experimental feature/.test(text))
      (emit as (...a: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return await import(builtin);
  } catch {
    return undefined;
  } finally {
    process.emitWarning = emit;
  }
}

/**
 * A SQL store opened here: it has the admin views and a purge, and its client is ours to close.
 * `run` runs one statement on that client; `table` is the claim table, whose versions and inbox
 * tables carry its name with `_versions` and `_inbox`.
 */
function sqlStore(
  kind: 'postgres' | 'mysql' | 'sqlite',
  store: Store & StoreAdmin & { purgeExpired(): Promise<number> },
  now: () => Promise<number>,
  closeClient: () => unknown,
  run: (sql: string) => unknown,
  table: string,
): OpenedStore {
  return {
    store,
    kind,
    shared: true,
    now,
    admin: store,
    purge: () => store.purgeExpired(),
    close: async () => {
      await store.close();
      await closeClient();
    },
    drop: async () => {
      // Plain names only (the stores refuse others too): nothing here is quoted.
      if (!/^[A-Za-z0-9_]+$/.test(table)) throw new UsageError(`not a plain table name: ${table}`);
      for (const t of [table, `${table}_versions`, `${table}_inbox`]) await run(`DROP TABLE IF EXISTS ${t}`);
    },
  };
}

async function load<T>(pkg: string): Promise<T> {
  try {
    return (await import(pkg)) as T;
  } catch {
    throw new UsageError(
      `this store needs the ${pkg.split('/')[0]} package: npm install ${pkg.split('/')[0]}`,
    );
  }
}
