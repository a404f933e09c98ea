/** Opens a store from a URL for the CLI: memory, a SQLite file, redis://, postgres://, mysql://. */
import { UsageError } from './args.js';
import type { Store } from '../lease/types.js';

export interface OpenedStore {
  store: Store;
  kind: 'memory' | 'sqlite' | 'redis' | 'postgres' | 'mysql';
  /** Shared by several processes (memory is not). */
  shared: boolean;
  /** Closes what was opened here (client and store). */
  close(): Promise<void>;
  /** Housekeeping where the store has it: rows past retention deleted. */
  purge?: () => Promise<number>;
}

/**
 * `name` isolates this use (a table name or key prefix) so a demo never collides with real data.
 */
export async function openStore(url: string, name = 'onceonly'): Promise<OpenedStore> {
  const scheme = /^([a-z0-9+]+):/i.exec(url)?.[1]?.toLowerCase();
  if (url === 'memory') {
    const { memoryStore } = await import('../stores/memory.js');
    const store = memoryStore({ maxEntries: 1_000_000 });
    return { store, kind: 'memory', shared: false, close: () => store.close() };
  }
  if (scheme === 'redis' || scheme === 'rediss' || scheme === 'valkey') {
    const { createClient } = await load<typeof import('redis')>('redis');
    const client = await createClient({ url: url.replace(/^valkey:/, 'redis:') }).connect();
    const { redisStore } = await import('../stores/redis.js');
    const store = redisStore({ client, prefix: `${name}:` });
    return {
      store,
      kind: 'redis',
      shared: true,
      close: async () => {
        await store.close();
        await client.quit();
      },
    };
  }
  if (scheme === 'postgres' || scheme === 'postgresql') {
    const pg = await load<typeof import('pg')>('pg');
    const Pool = pg.Pool ?? (pg as unknown as { default: typeof pg }).default.Pool;
    const pool = new Pool({ connectionString: url, max: 8 });
    const { postgresStore } = await import('../stores/postgres.js');
    const store = postgresStore({ client: pool, table: name });
    return {
      store,
      kind: 'postgres',
      shared: true,
      close: async () => {
        await store.close();
        await pool.end();
      },
      purge: () => store.purgeExpired(),
    };
  }
  if (scheme === 'mysql' || scheme === 'mariadb') {
    const mysql = await load<typeof import('mysql2/promise')>('mysql2/promise');
    const pool = mysql.createPool({ uri: url.replace(/^mariadb:/, 'mysql:'), connectionLimit: 8 });
    const { mysqlStore } = await import('../stores/mysql.js');
    const store = mysqlStore({ client: pool, table: name });
    return {
      store,
      kind: 'mysql',
      shared: true,
      close: async () => {
        await store.close();
        await pool.end();
      },
      purge: () => store.purgeExpired(),
    };
  }
  if (scheme === 'sqlite' || scheme === 'file' || scheme === undefined) {
    const path = scheme ? url.replace(/^(sqlite|file):(\/\/)?/i, '') : url;
    const Database = (await load<{ default: typeof import('better-sqlite3') }>('better-sqlite3')).default;
    const db = new Database(path);
    const { sqliteStore } = await import('../stores/sqlite.js');
    const store = sqliteStore({ client: db, table: name.replace(/[^a-z0-9_]/gi, '_') });
    return {
      store,
      kind: 'sqlite',
      shared: true,
      close: async () => {
        await store.close();
        db.close();
      },
      purge: () => store.purgeExpired(),
    };
  }
  throw new UsageError(
    `unknown store ${JSON.stringify(url)}: use memory, a SQLite file path, redis://, postgres:// or mysql://`,
  );
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
