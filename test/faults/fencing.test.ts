/**
 * `attempt` is a real fencing number on every store: a release keeps it, so no two runs of one key
 * ever share an attempt. The effect is the fenced upsert of docs/reliability.md, on PostgreSQL:
 *
 *   ... ON CONFLICT (id) DO UPDATE ... WHERE effects.attempt <= EXCLUDED.attempt
 *
 * 1. A handler passes its deadline but ignores its signal: the engine releases, the retry runs
 *    while it is still going, and its late write comes last. Before, both ran at attempt 1 and
 *    both writes landed (two effects, neither reported); now the retry runs at attempt 2 and the
 *    stale write is refused.
 * 2. A takeover at attempt 2 writes its fenced effect, then fails (the email step) and releases.
 *    Before, the next retry got attempt 1, the fence refused it and the email was never sent; now
 *    it gets attempt 3, passes the fence, and sends it.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { createClient } from 'redis';
import type { Store } from '../../src/core/types.js';
import { once } from '../../src/once.js';
import { memoryStore } from '../../src/stores/memory.js';
import { mysqlStore } from '../../src/stores/mysql.js';
import { postgresStore } from '../../src/stores/postgres.js';
import { redisStore } from '../../src/stores/redis.js';
import { sqliteStore } from '../../src/stores/sqlite.js';
import { reachable, servers } from '../support/servers.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const run = randomBytes(4).toString('hex');
const table = `oo_fence_${run}`;
const effects = `oo_fence_effects_${run}`;

const pool = new pg.Pool({ connectionString: servers.postgres, max: 6 });
pool.on('error', () => {});
const pgUp = await reachable('PostgreSQL (fencing)', servers.postgres, () => pool.query('SELECT 1'));
const myPool = mysql.createPool({ uri: servers.mysql, connectionLimit: 4 });
const myUp = await reachable('MySQL (fencing)', servers.mysql, () => myPool.query('SELECT 1'));
const redisUp = await reachable('Redis (fencing)', servers.redis, async () => {
  const c = await createClient({ url: servers.redis }).connect();
  await c.quit();
});
const dir = mkdtempSync(join(tmpdir(), 'oo-fence-'));
const db = new Database(join(dir, 'fence.db'));
const redis = redisUp
  ? await createClient({ url: servers.redis })
      .on('error', () => {})
      .connect()
  : undefined;

const stores: [string, Store][] = [
  ['memory', memoryStore()],
  ['sqlite', sqliteStore({ client: db, table })],
];
if (redis) stores.push(['redis', redisStore({ client: redis, prefix: `oo-fence-${run}:` })]);
if (pgUp) stores.push(['postgres', postgresStore({ client: pool, table })]);
if (myUp) stores.push(['mysql', mysqlStore({ client: myPool, table })]);

/** The fenced effect: lands only for the same or a newer attempt than the last one that landed. */
async function fencedWrite(id: string, attempt: number): Promise<boolean> {
  const { rowCount } = await pool.query(
    `INSERT INTO ${effects} (id, attempt, applied) VALUES ($1, $2, 1)
     ON CONFLICT (id) DO UPDATE SET attempt = EXCLUDED.attempt, applied = ${effects}.applied + 1
     WHERE ${effects}.attempt <= EXCLUDED.attempt`,
    [id, attempt],
  );
  return rowCount === 1;
}

async function applied(id: string): Promise<number> {
  const { rows } = await pool.query(`SELECT applied FROM ${effects} WHERE id = $1`, [id]);
  return Number(rows[0]?.applied ?? 0);
}

after(async () => {
  if (pgUp) {
    await pool.query(`DROP TABLE IF EXISTS ${effects}, "${table}", "${table}_versions"`);
  }
  await pool.end();
  if (myUp) await myPool.query(`DROP TABLE IF EXISTS \`${table}\`, \`${table}_versions\``);
  await myPool.end();
  if (redis) {
    for await (const keys of redis.scanIterator({ MATCH: `oo-fence-${run}:*`, COUNT: 1000 }))
      if (keys.length) await redis.unlink(keys);
    await redis.quit();
  }
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

if (pgUp)
  describe('attempt is a fencing number on every store (effects fenced on PostgreSQL)', async () => {
    await pool.query(
      `CREATE TABLE IF NOT EXISTS ${effects} (id text PRIMARY KEY, attempt int NOT NULL, applied int NOT NULL)`,
    );

    for (const [name, store] of stores) {
      it(`${name}: a timed-out handler that ignores its signal and the retry that overlaps it get different attempts; the fenced effect lands once`, async () => {
        const id = `${name}:overlap`;
        let lateWrite!: (landed: boolean) => void;
        const stale = new Promise<boolean>((resolve) => {
          lateWrite = resolve;
        });
        // The stale run writes only after the retry's write: its write comes last however slow
        // the machine is (a fixed sleep let a loaded retry write after it, which the fence allows).
        let retryWrote!: () => void;
        const afterRetry = new Promise<void>((resolve) => {
          retryWrote = resolve;
        });
        const first = await once(
          store,
          id,
          async ({ attempt }) => {
            await afterRetry; // ignores its signal: still running after the deadline
            lateWrite(await fencedWrite(id, attempt));
          },
          { timeout: '200ms', lease: '10s', logger: false },
        );
        assert.equal(first.outcome, 'failed', 'the deadline passed');
        assert.equal(first.outcome === 'failed' && first.attempt, 1);
        // The provider's retry arrives while the first handler is still running.
        const retry = await once(
          store,
          id,
          async ({ attempt }) => {
            const landed = await fencedWrite(id, attempt);
            retryWrote();
            return landed;
          },
          { lease: '10s', logger: false },
        );
        assert.equal(retry.outcome, 'processed');
        assert.equal(
          retry.outcome === 'processed' && retry.attempt,
          2,
          'the retry runs at attempt 2, not 1 again',
        );
        assert.equal(retry.outcome === 'processed' && retry.value, true, "the retry's write landed");
        assert.equal(await stale, false, "the stale run's late write was refused by the fence");
        assert.equal(await applied(id), 1, 'the effect landed once');
      });

      it(`${name}: after a takeover at attempt 2 wrote its effect and failed, the next retry gets attempt 3 and finishes the work`, async () => {
        const id = `${name}:resume`;
        const emails: number[] = [];
        // A process claims and dies: its lease runs out.
        const crashed = await store.claim(id, { leaseMs: 200, retentionMs: 60_000 });
        assert.equal(crashed.status, 'acquired');
        await sleep(500);
        const handler = async ({ attempt }: { attempt: number }) => {
          if (!(await fencedWrite(id, attempt))) return 'fenced out'; // a newer attempt owns it
          if (attempt === 2) throw new Error('email service down'); // fails after its write
          emails.push(attempt);
          return 'sent';
        };
        const takeover = await once(store, id, handler, { lease: '10s', logger: false });
        assert.equal(
          takeover.outcome === 'failed' && takeover.attempt,
          2,
          'the takeover ran at attempt 2 and failed',
        );
        const retry = await once(store, id, handler, { lease: '10s', logger: false });
        assert.equal(retry.outcome === 'processed' && retry.attempt, 3, 'the retry gets attempt 3');
        assert.equal(retry.outcome === 'processed' && retry.value, 'sent');
        assert.deepEqual(emails, [3], 'the rest of the work happened, once');
        assert.equal(await applied(id), 2, 'both attempts wrote, in order');
      });
    }
  });
