/**
 * The MySQL/MariaDB spec module for the multi-process inbox race (test/support/inbox-race.ts):
 * every worker opens its own mysql2 pool, all on one table of the run.
 */
import mysql from 'mysql2/promise';
import { mysqlStore } from '../../src/stores/mysql.js';
import { servers } from '../support/servers.js';

const table = (runId: string) => `oo_${runId}`;

export async function open(runId: string) {
  const pool = mysql.createPool({ uri: servers.mysql, connectionLimit: 4 });
  return { inbox: mysqlStore({ client: pool, table: table(runId) }).inbox, close: () => pool.end() };
}

export async function cleanup(runId: string): Promise<void> {
  const connection = await mysql.createConnection({ uri: servers.mysql });
  try {
    await connection.query(`DROP TABLE IF EXISTS \`${table(runId)}_inbox\``);
  } finally {
    await connection.end();
  }
}
