// The race and crash spec of the PostgreSQL store, over either driver: one keys table and one
// effects table per run, created by whichever worker comes first, dropped by cleanup().
import pg from 'pg';
import postgres from 'postgres';
import { postgresStore } from '../../src/stores/postgres.js';
import type { RaceSpecModule } from '../support/race.js';
import { servers } from '../support/servers.js';

const tableOf = (runId: string) => `oo_${runId.replace(/[^a-z0-9]/gi, '')}`;

/** A client of either driver reduced to what the spec needs. */
interface Conn {
  client: pg.Pool | postgres.Sql;
  query(text: string, values?: unknown[]): Promise<Record<string, unknown>[]>;
  end(): Promise<void>;
}

function connect(driver: 'pg' | 'postgres.js', max: number): Conn {
  if (driver === 'pg') {
    const pool = new pg.Pool({ connectionString: servers.postgres, max });
    return {
      client: pool,
      query: async (text, values) => (await pool.query(text, values)).rows,
      end: () => pool.end(),
    };
  }
  const sql = postgres(servers.postgres, { max, onnotice: () => {} });
  return {
    client: sql,
    query: async (text, values = []) => [...(await sql.unsafe(text, values as never[]))],
    end: () => sql.end(),
  };
}

export function specFor(driver: 'pg' | 'postgres.js'): RaceSpecModule {
  return {
    async open(runId) {
      const conn = connect(driver, 4);
      const table = tableOf(runId);
      // The effects table has no unique constraint: a doubled effect must be countable, not refused.
      // One implicit transaction holding a transaction-level lock: it is released at the commit, so
      // the next worker's CREATE ... IF NOT EXISTS sees the table (a session lock released before the
      // commit let two CREATEs collide on pg_type).
      await conn.query(
        `SELECT pg_advisory_xact_lock(hashtext('${table}_effects'));
         CREATE TABLE IF NOT EXISTS "${table}_effects" (event_id text NOT NULL, attempt integer NOT NULL);`,
      );
      const store = postgresStore({ client: conn.client, table });
      await store.ready();
      return {
        store,
        async effect(eventId, attempt) {
          await conn.query(`INSERT INTO "${table}_effects" (event_id, attempt) VALUES ($1, $2)`, [
            eventId,
            attempt,
          ]);
        },
        close: () => conn.end(),
      };
    },
    async effects(runId) {
      const conn = connect(driver, 1);
      try {
        const rows = await conn.query(
          `SELECT event_id, count(*)::int AS n FROM "${tableOf(runId)}_effects" GROUP BY event_id`,
        );
        return new Map(rows.map((r) => [String(r.event_id), Number(r.n)]));
      } finally {
        await conn.end();
      }
    },
    async cleanup(runId) {
      const conn = connect(driver, 1);
      const table = tableOf(runId);
      try {
        for (const t of [table, `${table}_versions`, `${table}_effects`])
          await conn.query(`DROP TABLE IF EXISTS "${t}"`);
      } finally {
        await conn.end();
      }
    },
  };
}
