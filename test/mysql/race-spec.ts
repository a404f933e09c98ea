// The MySQL/MariaDB spec of the multi-process harness (test/support/race.ts): every process opens its
// own pool; effects are rows of a table of this run, counted from the database.
import mysql from 'mysql2/promise';
import { mysqlStore } from '../../src/stores/mysql.js';
import { servers } from '../support/servers.js';

const keysTable = (runId: string) => `oo_race_${runId}`;
const effectsTable = (runId: string) => `oo_race_${runId}_effects`;

async function withPool<T>(fn: (pool: mysql.Pool) => Promise<T>): Promise<T> {
  const pool = mysql.createPool({ uri: servers.mysql, connectionLimit: 2 });
  try {
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

export async function open(runId: string) {
  const pool = mysql.createPool({ uri: servers.mysql, connectionLimit: 8 });
  await pool.query(
    `CREATE TABLE IF NOT EXISTS \`${effectsTable(runId)}\` (
      id BIGINT AUTO_INCREMENT PRIMARY KEY, event_id VARCHAR(100) NOT NULL, attempt INT NOT NULL
    ) ENGINE=InnoDB`,
  );
  const store = mysqlStore({ client: pool, table: keysTable(runId) });
  return {
    store,
    async effect(eventId: string, attempt: number) {
      await pool.query(`INSERT INTO \`${effectsTable(runId)}\` (event_id, attempt) VALUES (?, ?)`, [
        eventId,
        attempt,
      ]);
    },
    close: () => pool.end(),
  };
}

export async function effects(runId: string): Promise<Map<string, number>> {
  return withPool(async (pool) => {
    const [rows] = await pool.query(
      `SELECT event_id, COUNT(*) AS n FROM \`${effectsTable(runId)}\` GROUP BY event_id`,
    );
    return new Map((rows as { event_id: string; n: unknown }[]).map((r) => [r.event_id, Number(r.n)]));
  });
}

export async function cleanup(runId: string): Promise<void> {
  await withPool(async (pool) => {
    const t = keysTable(runId);
    await pool.query(`DROP TABLE IF EXISTS \`${t}\`, \`${t}_versions\`, \`${effectsTable(runId)}\``);
  });
}
