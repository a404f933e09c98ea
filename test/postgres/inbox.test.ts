// A receiver in inbox mode over postgresStore, with pg and postgres.js (test/support/inbox-receiver.ts).
import { randomBytes } from 'node:crypto';
import { after } from 'node:test';
import pg from 'pg';
import postgres from 'postgres';
import { postgresStore } from '../../src/stores/postgres.js';
import { inboxReceiverSpec } from '../support/inbox-receiver.js';
import { reachable, servers } from '../support/servers.js';
import { stepsSpec } from '../support/steps-spec.js';

const run = randomBytes(4).toString('hex');
const pool = new pg.Pool({ connectionString: servers.postgres, max: 4 });
const tables: string[] = [];
const table = (client: string, name: string) => {
  const t = `oo_rcv_${run}_${client}_${name}`;
  tables.push(t);
  return t;
};

if (await reachable('PostgreSQL', servers.postgres, () => pool.query('SELECT 1'))) {
  const sql = postgres(servers.postgres, { max: 4, onnotice: () => {} });
  after(async () => {
    for (const t of tables) await pool.query(`DROP TABLE IF EXISTS ${t}, ${t}_versions, ${t}_inbox`);
    await pool.end();
    await sql.end();
  });
  inboxReceiverSpec('postgresStore (pg)', (name) =>
    postgresStore({ client: pool, table: table('pg', name) }),
  );
  inboxReceiverSpec('postgresStore (postgres.js)', (name) =>
    postgresStore({ client: sql, table: table('js', name) }),
  );
  stepsSpec('postgresStore (pg)', (name) => postgresStore({ client: pool, table: table('pg', name) }));
  stepsSpec('postgresStore (postgres.js)', (name) =>
    postgresStore({ client: sql, table: table('js', name) }),
  );
} else {
  await pool.end();
}
