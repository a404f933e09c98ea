/**
 * The stores the fault worker opens (Redis, PostgreSQL, MySQL and SQLite), each with its server's
 * URL and a probe that reaches it: a fault test picks the lines it runs on, and fails (never skips)
 * when a server cannot be reached.
 */
import mysql from 'mysql2/promise';
import pg from 'pg';
import { createClient } from 'redis';
import { servers } from '../../support/servers.js';
import type { FleetOptions } from './fleet.js';

export interface FaultStore {
  label: string;
  store: FleetOptions['store'];
  url: string;
  probe: () => Promise<unknown>;
}

export const FAULT_STORES: readonly FaultStore[] = [
  {
    label: 'Redis',
    store: 'redis',
    url: servers.redis,
    probe: async () => (await createClient({ url: servers.redis }).connect()).quit(),
  },
  {
    label: 'PostgreSQL',
    store: 'postgres',
    url: servers.postgres,
    probe: async () => {
      const c = new pg.Client({ connectionString: servers.postgres });
      await c.connect();
      await c.end();
    },
  },
  {
    label: 'MariaDB',
    store: 'mysql',
    url: servers.mysql,
    probe: async () => (await mysql.createConnection(servers.mysql)).end(),
  },
  { label: 'SQLite', store: 'sqlite', url: 'sqlite', probe: async () => {} },
];
