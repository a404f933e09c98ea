import { randomBytes } from 'node:crypto';
import { after } from 'node:test';
import pg from 'pg';
import postgres from 'postgres';
import { inboxWakeSpec } from '../../test/support/inbox-wake.js';
import { reachable, servers } from '../../test/support/servers.js';
import { postgresStore } from './postgres.js';

// Tables of this run, dropped at the end; the watch's channel is the inbox table's name.
const run = randomBytes(4).toString('hex');
const tables: string[] = [];

const probe = new pg.Pool({ connectionString: servers.postgres, max: 1 });
const up = await reachable('PostgreSQL', servers.postgres, () => probe.query('SELECT 1'));

if (up) {
  const clients: { end(): Promise<unknown> }[] = [];
  after(async () => {
    for (const client of clients) await client.end();
    for (const t of tables) await probe.query(`DROP TABLE IF EXISTS ${t}_inbox, ${t}, ${t}_versions`);
    await probe.end();
  });
  /** The spec's options over one table, each store over a client of its own. */
  const over = (name: string, client: () => pg.Pool | postgres.Sql) => {
    const table = `oo_wake_${name}_${run}`;
    tables.push(table);
    return {
      store() {
        const c = client();
        clients.push(c);
        return postgresStore({ client: c, table });
      },
      async watchers() {
        const { rows } = await probe.query(
          `SELECT pid::text AS pid FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE $1`,
          [`listen "${table}_inbox"`],
        );
        return rows.map((r: { pid: string }) => r.pid);
      },
      async kill(pid: string) {
        const { rows } = await probe.query('SELECT pg_terminate_backend($1::int) AS ok', [pid]);
        return rows[0]?.ok === true;
      },
    };
  };

  inboxWakeSpec(
    'PostgreSQL (pg Pool)',
    over('pg', () => new pg.Pool({ connectionString: servers.postgres, max: 4 })),
  );
  inboxWakeSpec('PostgreSQL (postgres.js)', {
    ...over('pjs', () => postgres(servers.postgres, { max: 4, onnotice: () => {} })),
    reportsDrops: false,
  });
} else {
  await probe.end();
}
