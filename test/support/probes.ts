/** The shared stores' servers, each with a probe that connects and disconnects (for `reachable`). */
import mysql from 'mysql2/promise';
import pg from 'pg';
import { createClient } from 'redis';
import { servers } from './servers.js';

export const sharedStores: [label: string, url: string, probe: () => Promise<unknown>][] = [
  ['Redis', servers.redis, async () => (await createClient({ url: servers.redis }).connect()).quit()],
  [
    'PostgreSQL',
    servers.postgres,
    async () => {
      const c = new pg.Client({ connectionString: servers.postgres });
      await c.connect();
      await c.end();
    },
  ],
  ['MariaDB/MySQL', servers.mysql, async () => (await mysql.createConnection(servers.mysql)).end()],
];

/**
 * Removes what a test left under `name` on a shared store: Redis keys `<name>:*`, or the SQL tables
 * `<name><suffix>` for each suffix ('' is the table itself).
 */
export async function dropStoreData(label: string, name: string, suffixes: readonly string[]): Promise<void> {
  if (label === 'Redis') {
    const client = await createClient({ url: servers.redis }).connect();
    for await (const keys of client.scanIterator({ MATCH: `${name}:*` }))
      if (keys.length) await client.del(keys);
    await client.quit();
    return;
  }
  const drop = `DROP TABLE IF EXISTS ${suffixes.map((s) => `${name}${s}`).join(', ')}`;
  if (label === 'PostgreSQL') {
    const c = new pg.Client({ connectionString: servers.postgres });
    await c.connect();
    await c.query(drop);
    await c.end();
    return;
  }
  const c = await mysql.createConnection(servers.mysql);
  await c.query(drop);
  await c.end();
}
