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
