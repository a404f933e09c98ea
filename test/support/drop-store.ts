/**
 * Removes what a test's store left on a shared server, by the store's URL and key space name (as
 * `openStore(url, name)` of src/cli/stores.ts names them): its claim, version and inbox tables on
 * PostgreSQL and MariaDB, its keys on Redis. The same `drop()` the demo runs at its end. A SQLite
 * file or the memory store goes with the test's temporary directory. Failures are the caller's to
 * ignore or report.
 */
import mysql from 'mysql2/promise';
import pg from 'pg';
import { createClient } from 'redis';
import { openStore } from '../../src/cli/stores.js';

export async function dropStore(url: string, name: string): Promise<void> {
  if (!/^(rediss?|valkey|postgres(ql)?|mysql|mariadb):\/\//.test(url)) return;
  const opened = await openStore(url, name, { existing: true });
  try {
    await opened.drop();
  } finally {
    await opened.close();
  }
}

/**
 * The tables (PostgreSQL, MariaDB) or keys (Redis) on the store at `url` whose names start with
 * `prefix` (a plain name: letters, digits and underscores).
 */
async function namesOnStore(url: string, prefix: string): Promise<string[]> {
  if (!/^[A-Za-z0-9_]+$/.test(prefix)) throw new Error(`namesOnStore: not a plain name: ${prefix}`);
  const like = `${prefix.replaceAll('_', '\\_')}%`;
  const names: string[] = [];
  if (/^(rediss?|valkey):\/\//.test(url)) {
    const c = await createClient({ url: url.replace(/^valkey:/, 'redis:') }).connect();
    try {
      for await (const keys of c.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) names.push(...keys);
    } finally {
      await c.quit();
    }
  } else if (/^postgres(ql)?:\/\//.test(url)) {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      const { rows } = await c.query('SELECT tablename AS t FROM pg_tables WHERE tablename LIKE $1', [like]);
      for (const row of rows) names.push(row.t);
    } finally {
      await c.end();
    }
  } else {
    const c = await mysql.createConnection(url.replace(/^mariadb:/, 'mysql:'));
    try {
      const [rows] = await c.query(
        'SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE ?',
        [like],
      );
      for (const row of rows as { t: string }[]) names.push(row.t);
    } finally {
      await c.end();
    }
  }
  return names;
}

/**
 * Whether anything of the key space `name` is on the store at `url`: any of its three tables on
 * PostgreSQL or MariaDB, any key under its prefix on Redis.
 */
export async function storeHas(url: string, name: string): Promise<boolean> {
  const ours = new Set([name, `${name}_versions`, `${name}_inbox`]);
  return (await namesOnStore(url, name)).some((n) => ours.has(n) || n.startsWith(`${name}:`));
}
