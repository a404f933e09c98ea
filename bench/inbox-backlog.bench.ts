// The inbox under a backlog (issue 32): per store (PostgreSQL, MariaDB/MySQL, SQLite, Redis), one
// inbox filled with BENCH_BACKLOG pending entries (default 1,000,000) against an empty one, side by
// side in one run, in alternating rounds: accept throughput (fresh 2 KiB deliveries, 32 in flight),
// take latency (one entry a take, p50/p99), the drain rate of a worker loop (concurrency 8, its
// completes batched as a receiver's are: a no-op run, and a 5 ms one against 8/5 ms); then bytes
// per entry, and the cost of `purge` over the backlog made completed. The SQL fills copy one entry
// the store accepted (its own row, shaped as it writes them) N times in bulk `INSERT ... SELECT`;
// Redis is filled through the store's accept, 256 in flight (auto-pipelined). Targets: accept >=
// 0.9x and take p99 <= 1.5x of the empty inbox's.
// Also: queries a second of a worker idle on an empty PostgreSQL inbox (counted at the client).
//
//   npm run bench -- inbox-backlog     (BENCH_BACKLOG=200000; BENCH_STORES=postgres,redis; BENCH_SMALL=1)
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { createClient } from 'redis';
import type { InboxJob, InboxStore } from '../src/core/inbox.js';
import { batchedComplete } from '../src/receiver/complete-batch.js';
import { startWorkerLoop } from '../src/receiver/worker-loop.js';
import { mysqlStore } from '../src/stores/mysql.js';
import { postgresStore } from '../src/stores/postgres.js';
import { redisStore } from '../src/stores/redis.js';
import { sqliteStore } from '../src/stores/sqlite.js';
import { servers } from '../test/support/servers.js';
import { inboxInput } from './support/inbox-input.js';
import { median } from './support/stats.js';

const small = process.env.BENCH_SMALL === '1';
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? (small ? 20_000 : 1_000_000));
const ACCEPTS = small ? 500 : 2_000;
const TAKES = small ? 200 : 1_000;
const DRAIN = small ? 400 : 3_000;
const ROUNDS = 3;
const CONCURRENCY = 8;
const LEASE_MS = 60_000;
const RETENTION_MS = 86_400_000;
const run = randomBytes(3).toString('hex');
const RECEIVER = 'stripe';
const now = () => performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Opened {
  /** The empty inbox and the one with the backlog. */
  empty: InboxStore;
  full: InboxStore;
  /** Copies the entry `stripe:tpl` of the full inbox N times (keys stripe:bl_1...). */
  fill(n: number): Promise<void>;
  /** Bytes the full inbox holds per entry, and how they were read. */
  bytes(n: number): Promise<string>;
  /** Makes every backlog entry completed and past its retention (for purge); says how. */
  completeAll(): Promise<string>;
  close(): Promise<void>;
}

const seqSql = (n: number, from: number) => ({ from, to: from + n - 1 });
const COLS =
  'entry_key, full_key, receiver, state, token, attempts, fingerprint, event_type, event_id, item, meta, body, accepted_at, due_at, updated_at';
const copyCols = (key: string, id: string) =>
  `${key}, full_key, receiver, state, token, attempts, fingerprint, event_type, ${id}, item, meta, body, accepted_at, due_at, updated_at`;
const CHUNK = 50_000;

const stores: Record<string, () => Promise<Opened>> = {
  async postgres() {
    const pool = new pg.Pool({ connectionString: servers.postgres, max: 10 });
    const [e, f] = [`oo_bl_${run}_e`, `oo_bl_${run}_f`];
    const T = `"${f}_inbox"`;
    return {
      empty: postgresStore({ client: pool, table: e }).inbox!,
      full: postgresStore({ client: pool, table: f }).inbox!,
      async fill(n) {
        for (let at = 1; at <= n; at += CHUNK) {
          const { from, to } = seqSql(Math.min(CHUNK, n - at + 1), at);
          await pool.query(
            `INSERT INTO ${T} (${COLS}) SELECT ${copyCols(`'stripe:bl_' || g`, `'bl_' || g`)} FROM ${T} t, generate_series(${from}, ${to}) g WHERE t.entry_key = 'stripe:tpl'`,
          );
        }
        await pool.query(`VACUUM ANALYZE ${T}`);
      },
      async bytes(n) {
        const { rows } = await pool.query(`SELECT pg_total_relation_size('${T}')::int8 AS b`);
        return `${Math.round(Number(rows[0].b) / n)} (pg_total_relation_size)`;
      },
      async completeAll() {
        await pool.query(
          `UPDATE ${T} SET state = 1, token = '', due_at = 1 WHERE entry_key LIKE 'stripe:bl_%'`,
        );
        return 'one UPDATE';
      },
      async close() {
        await pool.query(`DROP TABLE IF EXISTS "${e}_inbox", "${e}", ${T}, "${f}"`);
        await pool.end();
      },
    };
  },
  async mysql() {
    const pool = mysql.createPool({ uri: servers.mysql, connectionLimit: 10 });
    const [e, f] = [`oo_bl_${run}_e`, `oo_bl_${run}_f`];
    const T = `\`${f}_inbox\``;
    return {
      empty: mysqlStore({ client: pool, table: e }).inbox!,
      full: mysqlStore({ client: pool, table: f }).inbox!,
      async fill(n) {
        for (let at = 1; at <= n; at += CHUNK) {
          const { from, to } = seqSql(Math.min(CHUNK, n - at + 1), at);
          await pool.query(
            `INSERT INTO ${T} (${COLS}) SELECT ${copyCols(`CONCAT('stripe:bl_', g.seq)`, `CONCAT('bl_', g.seq)`)} FROM ${T} t, seq_${from}_to_${to} g WHERE t.entry_key = 'stripe:tpl'`,
          );
        }
        await pool.query(`ANALYZE TABLE ${T}`);
      },
      async bytes(n) {
        const [rows] = (await pool.query(
          `SELECT data_length + index_length AS b FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = '${f}_inbox'`,
        )) as unknown as [{ b: number }[]];
        return `${Math.round(Number(rows[0]!.b) / n)} (data_length + index_length)`;
      },
      async completeAll() {
        await pool.query(
          `UPDATE ${T} SET state = 1, token = '', due_at = 1 WHERE entry_key LIKE 'stripe:bl\\_%'`,
        );
        return 'one UPDATE';
      },
      async close() {
        await pool.query(`DROP TABLE IF EXISTS \`${e}_inbox\`, \`${e}\`, ${T}, \`${f}\``);
        await pool.end();
      },
    };
  },
  async sqlite() {
    const dir = mkdtempSync(join(tmpdir(), 'onceonly-backlog-'));
    const open = (name: string) => {
      const db = new Database(join(dir, `${name}.db`));
      db.pragma('journal_mode = WAL');
      return db;
    };
    const [dbE, dbF] = [open('empty'), open('full')];
    const T = '"oo_bl_inbox"';
    return {
      empty: sqliteStore({ client: dbE, table: 'oo_bl' }).inbox!,
      full: sqliteStore({ client: dbF, table: 'oo_bl' }).inbox!,
      async fill(n) {
        for (let at = 1; at <= n; at += CHUNK) {
          const { from, to } = seqSql(Math.min(CHUNK, n - at + 1), at);
          dbF.exec(
            `INSERT INTO ${T} (${COLS}) WITH RECURSIVE g(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM g WHERE i < ${to}) SELECT ${copyCols(`'stripe:bl_' || g.i`, `'bl_' || g.i`)} FROM ${T} t, g WHERE t.entry_key = 'stripe:tpl'`,
          );
        }
        dbF.pragma('wal_checkpoint(TRUNCATE)');
      },
      async bytes(n) {
        const pages =
          Number(dbF.pragma('page_count', { simple: true })) *
          Number(dbF.pragma('page_size', { simple: true }));
        return `${Math.round(pages / n)} (page_count x page_size; file ${Math.round(statSync(join(dir, 'full.db')).size / n)})`;
      },
      async completeAll() {
        dbF.exec(`UPDATE ${T} SET state = 1, token = '', due_at = 1 WHERE entry_key LIKE 'stripe:bl_%'`);
        return 'one UPDATE';
      },
      async close() {
        dbE.close();
        dbF.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
  async redis() {
    const client = createClient({ url: servers.redis, disableOfflineQueue: true });
    client.on('error', () => {});
    await client.connect();
    const prefix = `oo-bl-${run}`;
    const full = redisStore({ client, prefix: `${prefix}-f:` }).inbox!;
    let before = 0;
    const used = async () => Number(/used_memory:(\d+)/.exec(await client.info('memory'))![1]);
    return {
      empty: redisStore({ client, prefix: `${prefix}-e:` }).inbox!,
      full,
      async fill(n) {
        before = await used();
        let next = 1;
        await Promise.all(
          Array.from({ length: 256 }, async () => {
            while (next <= n) await full.accept(inboxInput(`stripe:bl_${next++}`, RECEIVER), {});
          }),
        );
      },
      async bytes(n) {
        const sample = `${prefix}-f:i:{stripe}:`;
        const [e, b] = [
          await client.memoryUsage(`${sample}e:stripe:bl_1`),
          await client.memoryUsage(`${sample}b:stripe:bl_1`),
        ];
        return `${Math.round(((await used()) - before) / n)} (INFO used_memory delta; MEMORY USAGE of one entry's hash ${e} + delivery ${b})`;
      },
      // Through the store itself (no one statement reaches every entry): takes of 500 and their
      // completeMany, 8 at once, each completed entry kept `retention`; then a wait until the last
      // one's retention ended, so purge finds every entry past it. (Redis expires the entry hashes
      // at their retention by itself: purge forgets the completed set's members, and whatever of
      // them the completes that came after did not already forget, 16 at a time.)
      async completeAll() {
        const n = await full.stats().then((x) => x.pending + x.processing);
        const retentionMs = 20_000 + Math.ceil(n / 10);
        await Promise.all(
          Array.from({ length: 8 }, async () => {
            for (;;) {
              const jobs = await full.take({ limit: 500, leaseMs: 600_000, receiver: RECEIVER });
              if (jobs.length === 0) return;
              await full.completeMany!(
                jobs.map((j) => j.lease),
                { retentionMs },
              );
            }
          }),
        );
        await sleep(retentionMs + 1_000);
        return `take + completeMany of every entry, kept ${retentionMs / 1000} s, waited out`;
      },
      async close() {
        for await (const keys of client.scanIterator({ MATCH: `${prefix}-*`, COUNT: 1000 }))
          if ((keys as unknown as string[]).length) await client.del(keys as unknown as string[]);
        await client.quit();
      },
    };
  },
};

async function acceptRate(inbox: InboxStore, tag: string): Promise<number> {
  let next = 0;
  const t0 = now();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < ACCEPTS) {
        const r = await inbox.accept(inboxInput(`stripe:${tag}_${next++}`, RECEIVER), {});
        if (r.status !== 'accepted') throw new Error(`not accepted: ${r.status}`);
      }
    }),
  );
  return ACCEPTS / ((now() - t0) / 1000);
}

/** Takes one entry at a time, TAKES times: latencies (ms); each taken entry completed, untimed. */
async function takeLatencies(inbox: InboxStore): Promise<number[]> {
  const lat: number[] = [];
  for (let i = 0; i < TAKES; i++) {
    const t0 = now();
    const [job] = await inbox.take({ limit: 1, leaseMs: LEASE_MS, receiver: RECEIVER });
    lat.push(now() - t0);
    if (!job) throw new Error('take found nothing');
    await inbox.complete(job.lease, { retentionMs: RETENTION_MS });
  }
  return lat;
}

/** A worker loop at CONCURRENCY until `count` runs (each `ms` long, then complete): runs a second. */
async function drainRate(inbox: InboxStore, count: number, ms: number): Promise<number> {
  let done = 0;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  // A receiver's completes: batched where the store has completeMany (every store here).
  const complete = batchedComplete(inbox, 3_000);
  const t0 = now();
  const worker = startWorkerLoop(
    {
      inbox,
      space: RECEIVER,
      leaseMs: LEASE_MS,
      storeTimeoutMs: 10_000,
      // As a receiver's run: the slot frees at the handler's end, its complete still on its way.
      async run(job: InboxJob, _takenAt: number, handlerEnded?: () => void) {
        if (ms > 0) await sleep(ms);
        handlerEnded?.();
        await complete(job.lease, { retentionMs: RETENTION_MS });
        if (++done === count) finish();
      },
      takeFailed: (error) => console.error('take failed:', error),
    },
    { concurrency: CONCURRENCY, pollInterval: '1s' },
    new Set(),
  );
  await finished;
  const rate = count / ((now() - t0) / 1000);
  await worker.stop();
  return rate;
}

const pct = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};
const f1 = (x: number) => x.toFixed(2);

async function bench(name: string): Promise<void> {
  const s = await stores[name]!();
  try {
    const tpl = await s.full.accept(inboxInput('stripe:tpl', RECEIVER), {});
    if (tpl.status !== 'accepted') throw new Error('template not accepted');
    let t0 = now();
    await s.fill(BACKLOG);
    const fillS = (now() - t0) / 1000;
    const bytes = await s.bytes(BACKLOG);
    const blank = () => ({
      accept: [] as number[],
      take: [] as number[],
      drain: [] as number[],
      drain5: [] as number[],
    });
    const figs = { empty: blank(), full: blank() };
    for (let r = 0; r < ROUNDS; r++) {
      for (const which of r % 2 ? (['full', 'empty'] as const) : (['empty', 'full'] as const)) {
        const inbox = s[which];
        const into = figs[which];
        into.accept.push(await acceptRate(inbox, `a${r}${which}`));
        // The empty inbox holds what this round accepted (ACCEPTS pending): takes find one each.
        into.take.push(...(await takeLatencies(inbox)).slice(Math.min(20, TAKES / 10)));
        if (which === 'empty') {
          // The empty inbox's drains run what is put in just before (untimed).
          await Promise.all(
            Array.from({ length: 2 * DRAIN }, (_, i) =>
              inbox.accept(inboxInput(`stripe:d${r}_${i}`, RECEIVER), {}),
            ),
          );
        }
        into.drain.push(await drainRate(inbox, DRAIN, 0));
        into.drain5.push(await drainRate(inbox, DRAIN, 5));
      }
    }
    t0 = now();
    const how = await s.completeAll();
    const marked = (now() - t0) / 1000;
    t0 = now();
    const purged = await s.full.purge();
    const purge = `${purged.toLocaleString('en')} completed entries purged in ${((now() - t0) / 1000).toFixed(1)} s (made completed by ${how} in ${marked.toFixed(1)} s, untimed)`;
    const e = figs.empty;
    const f = figs.full;
    const acc = median(f.accept) / median(e.accept);
    const p99 = pct(f.take, 0.99) / pct(e.take, 0.99);
    console.log(
      `\n${name}: ${BACKLOG.toLocaleString('en')} pending entries filled in ${fillS.toFixed(1)} s; bytes per entry ${bytes}`,
    );
    console.table(
      (['empty', 'full'] as const).map((w) => ({
        inbox: w === 'empty' ? 'empty' : `${BACKLOG.toLocaleString('en')} pending`,
        'accept/s': Math.round(median(figs[w].accept)),
        'take p50 ms': f1(pct(figs[w].take, 0.5)),
        'take p99 ms': f1(pct(figs[w].take, 0.99)),
        'drain no-op/s': Math.round(median(figs[w].drain)),
        'drain 5 ms/s': Math.round(median(figs[w].drain5)),
        '5 ms vs 8/5 ms': `${(median(figs[w].drain5) / 1600).toFixed(2)}x`,
      })),
    );
    console.log(
      `${name}: accept ${f1(acc)}x of empty (target >= 0.9: ${acc >= 0.9 ? 'OK' : 'MISSED'}); take p99 ${f1(p99)}x of empty (target <= 1.5: ${p99 <= 1.5 ? 'OK' : 'MISSED'}); purge: ${purge}`,
    );
  } finally {
    await s.close();
  }
}

/** Queries a second of a worker loop idle on an empty PostgreSQL inbox, counted at the pg client. */
async function idleQueries(): Promise<void> {
  const pool = new pg.Pool({ connectionString: servers.postgres, max: 2 });
  let queries = 0;
  const query = pool.query.bind(pool);
  pool.query = ((...args: Parameters<typeof query>) => {
    queries++;
    return query(...args);
  }) as typeof pool.query;
  const table = `oo_bl_${run}_idle`;
  const inbox = postgresStore({ client: pool, table }).inbox!;
  await inbox.stats({});
  const worker = startWorkerLoop(
    {
      inbox,
      space: RECEIVER,
      leaseMs: LEASE_MS,
      storeTimeoutMs: 10_000,
      run: async () => {},
      takeFailed: () => {},
    },
    { concurrency: CONCURRENCY, pollInterval: '1s' },
    new Set(),
  );
  await sleep(500);
  const q0 = queries;
  const seconds = small ? 3 : 10;
  await sleep(seconds * 1000);
  const idle = (queries - q0) / seconds;
  await worker.stop();
  await pool.query(`DROP TABLE IF EXISTS "${table}_inbox", "${table}"`);
  await pool.end();
  console.log(
    `\npostgres: a worker idle on an empty inbox (poll 1 s): ${idle.toFixed(2)} queries/s over ${seconds} s`,
  );
}

const wanted = process.env.BENCH_STORES?.split(',').map((x) => x.trim()) ?? Object.keys(stores);
console.log(
  `Inbox backlog: ${BACKLOG.toLocaleString('en')} pending entries against an empty inbox, ${ROUNDS} alternating rounds; accept ${ACCEPTS} a round (32 in flight), take ${TAKES} one at a time, drain ${DRAIN} at concurrency ${CONCURRENCY}`,
);
for (const name of wanted) await bench(name);
if (wanted.includes('postgres')) await idleQueries();
process.exit(0);
