/**
 * Removes what a test's store left on a shared server, by the store's URL and key space name (as
 * `openStore(url, name)` of src/cli/stores.ts names them): its claim, version and inbox tables on
 * PostgreSQL and MariaDB, its keys on Redis. A SQLite file or the memory store goes with the test's
 * temporary directory. Failures are the caller's to ignore or report.
 */
import mysql from 'mysql2/promise';
import pg from 'pg';
import { createClient } from 'redis';

export async function dropStore(url: string, name: string): Promise<void> {
  if (!/^[A-Za-z0-9_]+$/.test(name)) throw new Error(`dropStore: not a plain table name: ${name}`);
  const tables = [name, `${name}_versions`, `${name}_inbox`];
  if (/^rediss?:\/\//.test(url)) {
    const c = await createClient({ url }).connect();
    try {
      for await (const keys of c.scanIterator({ MATCH: `${name}:*`, COUNT: 1000 })) {
        if (keys.length > 0) await c.unlink(keys);
      }
    } finally {
      await c.quit();
    }
  } else if (/^postgres(ql)?:\/\//.test(url)) {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      for (const t of tables) await c.query(`DROP TABLE IF EXISTS ${t}`);
    } finally {
      await c.end();
    }
  } else if (/^(mysql|mariadb):\/\//.test(url)) {
    const c = await mysql.createConnection(url.replace(/^mariadb:/, 'mysql:'));
    try {
      for (const t of tables) await c.query(`DROP TABLE IF EXISTS ${t}`);
    } finally {
      await c.end();
    }
  }
}
