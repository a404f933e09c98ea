/**
 * The PostgreSQL spec module for the multi-process inbox race (test/support/inbox-race.ts): even
 * workers open a `pg` Pool, odd ones a postgres.js client, all on one table of the run.
 */
import pg from 'pg';
import postgres from 'postgres';
import { postgresStore } from '../../src/stores/postgres.js';
import { servers } from '../support/servers.js';

const table = (runId: string) => `oo_${runId}`;

export async function open(runId: string, seed: number) {
  if (seed % 2 === 0) {
    const pool = new pg.Pool({ connectionString: servers.postgres, max: 4 });
    return { inbox: postgresStore({ client: pool, table: table(runId) }).inbox, close: () => pool.end() };
  }
  const sql = postgres(servers.postgres, { max: 4, onnotice: () => {} });
  return { inbox: postgresStore({ client: sql, table: table(runId) }).inbox, close: () => sql.end() };
}

export async function cleanup(runId: string): Promise<void> {
  const client = new pg.Client({ connectionString: servers.postgres });
  await client.connect();
  try {
    await client.query(`DROP TABLE IF EXISTS ${table(runId)}_inbox`);
  } finally {
    await client.end();
  }
}
