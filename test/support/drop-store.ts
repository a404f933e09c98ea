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
 * Whether anything of the key space `name` is on the store at `url`: any of its three tables on
 * PostgreSQL or MariaDB, any key under its prefix on Redis.
 */
export async function storeHas(url: string, name: string): Promise<boolean> {
  const tables = [name, `${name}_versions`, `${name}_inbox`];
  if (/^rediss?:\/\//.test(url)) {
    const c = await createClient({ url }).connect();
    try {
      for await (const keys of c.scanIterator({ MATCH: `${name}:*`, COUNT: 1000 }))
        if (keys.length) return true;
      return false;
    } finally {
      await c.quit();
    }
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      const { rows } = await c.query('SELECT 1 FROM pg_tables WHERE tablename = ANY($1)', [tables]);
      return rows.length > 0;
    } finally {
      await c.end();
    }
  }
  const c = await mysql.createConnection(url.replace(/^mariadb:/, 'mysql:'));
  try {
    const [rows] = await c.query(
      'SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name IN (?)',
      [tables],
    );
    return (rows as unknown[]).length > 0;
  } finally {
    await c.end();
  }
}

/** The demo runs' key spaces on the store (`onceonly_demo_<hex>`). */
export async function demoKeySpaces(url: string): Promise<Set<string>> {
  const names = new Set<string>();
  const add = (found: string) => {
    const name = /^onceonly_demo_[0-9a-f]{16}/.exec(found)?.[0];
    if (name) names.add(name);
  };
  if (/^(rediss?|valkey):\/\//.test(url)) {
    const c = await createClient({ url: url.replace(/^valkey:/, 'redis:') }).connect();
    try {
      for await (const keys of c.scanIterator({ MATCH: 'onceonly_demo_*', COUNT: 1000 })) keys.forEach(add);
    } finally {
      await c.quit();
    }
  } else if (/^postgres(ql)?:\/\//.test(url)) {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      const { rows } = await c.query(
        "SELECT tablename FROM pg_tables WHERE tablename LIKE 'onceonly\\_demo\\_%'",
      );
      for (const row of rows) add(row.tablename);
    } finally {
      await c.end();
    }
  } else {
    const c = await mysql.createConnection(url.replace(/^mariadb:/, 'mysql:'));
    try {
      const [rows] = await c.query(
        "SELECT table_name AS t FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE 'onceonly\\_demo\\_%'",
      );
      for (const row of rows as { t: string }[]) add(row.t);
    } finally {
      await c.end();
    }
  }
  return names;
}
