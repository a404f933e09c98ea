// SQL inbox accept, one bench for the three SQL stores (PostgreSQL, MySQL/MariaDB, SQLite): accept
// of fresh 2 KiB deliveries (every key new), 32 in flight, against the same client inserting the
// same row raw: a plain single-statement `INSERT` of the same columns (headers, url and receivedAt
// as the same JSON, the body's bytes, the server's clock for the times) into a table of the same
// layout and indexes (the store's own inbox migration under another name), with no duplicate check.
// PostgreSQL and MySQL run the raw insert prepared (as the store does) and unprepared; the faster
// one is the floor. What differs between the stores is data (`targets`); the measuring is shared.
// Contenders run in rotating order within each round, in one process; each figure is the median of
// its rounds, and the verdict is the median of the per-round ratios (same load within a round).
// Target (issue 11): accept >= 0.8x the faster raw insert.
//
//   npm run bench -- sql-inbox            (BENCH_SMALL=1 for a quick run; BENCH_STORES=mysql,sqlite for some)
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import type { InboxStore } from '../src/core/inbox.js';
import { mysqlInboxMigration, mysqlStore } from '../src/stores/mysql.js';
import { postgresInboxMigration, postgresStore } from '../src/stores/postgres.js';
import { sqliteInboxMigration, sqliteStore } from '../src/stores/sqlite.js';
import { servers } from '../test/support/servers.js';
import { body, fingerprint, headers, idOf, inboxInput, TYPE } from './support/inbox-input.js';
import { median } from './support/stats.js';

const small = process.env.BENCH_SMALL === '1';
const accepts = small ? 1_000 : 3_000;
const rounds = small ? 3 : 9;
const concurrency = 32;
const run = randomBytes(4).toString('hex');

const input = (key: string) => inboxInput(key, 'stripe');
/** The columns' values as accept writes them (meta: headers, url, receivedAt, type, id, item). */
const rowValues = (key: string) => [
  key,
  'stripe',
  fingerprint,
  TYPE,
  idOf(key),
  JSON.stringify([headers, null, Date.now(), TYPE, idOf(key), null]),
  body,
];
const COLUMNS = `entry_key, full_key, receiver, state, token, attempts, fingerprint, event_type, event_id, item, meta, body, accepted_at, due_at, updated_at`;
const rawInsert = (table: string, now: string, p: (i: number) => string) =>
  `INSERT INTO ${table} (${COLUMNS}) VALUES (${p(1)}, NULL, ${p(2)}, 0, '', 0, ${p(3)}, ${p(4)}, ${p(5)}, NULL, ${p(6)}, ${p(7)}, ${now}, ${now}, ${now})`;

type Accept = (key: string) => Promise<void>;
interface Opened {
  /** The raw inserts, by name; the faster is the floor. */
  raw: Record<string, Accept>;
  inbox: InboxStore;
  /** Empties both tables between measurements. */
  clean(): Promise<void>;
  close(): Promise<void>;
  /** How the client is set up, for the report. */
  client: string;
}
interface Target {
  name: string;
  label: string;
  open(): Promise<Opened>;
}

const targets: Target[] = [
  {
    name: 'postgres',
    label: 'PostgreSQL',
    async open() {
      const pool = new pg.Pool({ connectionString: servers.postgres, max: 10 });
      const [store, raw] = [`oo_bsqi_${run}`, `oo_bsqi_raw_${run}`];
      await pool.query(postgresInboxMigration(raw));
      const NOW = '(floor(extract(epoch FROM clock_timestamp()) * 1000)::int8)';
      const text = rawInsert(`"${raw}_inbox"`, NOW, (i) => `$${i}`);
      return {
        client: 'one pg Pool (10 connections)',
        inbox: postgresStore({ client: pool, table: store }).inbox,
        raw: {
          'raw INSERT, prepared': async (key) =>
            void (await pool.query({ name: `raw_inbox_${run}`, text, values: rowValues(key) })),
          'raw INSERT, unnamed': async (key) => void (await pool.query(text, rowValues(key))),
        },
        clean: async () => void (await pool.query(`TRUNCATE "${store}_inbox", "${raw}_inbox"`)),
        close: async () => {
          await pool.query(`DROP TABLE IF EXISTS "${store}_inbox", "${raw}_inbox"`);
          await pool.end();
        },
      };
    },
  },
  {
    name: 'mysql',
    label: 'MariaDB/MySQL',
    async open() {
      const pool = mysql.createPool({ uri: servers.mysql, connectionLimit: 10 });
      const [store, raw] = [`oo_bsqi_${run}`, `oo_bsqi_raw_${run}`];
      for (const statement of mysqlInboxMigration(raw)
        .split(';')
        .filter((s) => s.trim() !== ''))
        await pool.query(statement);
      const NOW = "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000)";
      const text = rawInsert(`\`${raw}_inbox\``, NOW, () => '?');
      return {
        client: 'one mysql2 Pool (10 connections)',
        inbox: mysqlStore({ client: pool, table: store }).inbox,
        raw: {
          'raw INSERT, prepared (execute)': async (key) => void (await pool.execute(text, rowValues(key))),
          'raw INSERT, unprepared (query)': async (key) => void (await pool.query(text, rowValues(key))),
        },
        clean: async () => {
          await pool.query(`TRUNCATE TABLE \`${store}_inbox\``);
          await pool.query(`TRUNCATE TABLE \`${raw}_inbox\``);
        },
        close: async () => {
          await pool.query(`DROP TABLE IF EXISTS \`${store}_inbox\`, \`${raw}_inbox\``);
          await pool.end();
        },
      };
    },
  },
  {
    name: 'sqlite',
    label: 'SQLite',
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'onceonly-sql-inbox-bench-'));
      const db = new Database(join(dir, 'bench.db'));
      db.pragma('journal_mode = WAL');
      const [store, raw] = [`oo_bsqi_${run}`, `oo_bsqi_raw_${run}`];
      db.exec(sqliteInboxMigration(raw));
      const NOW = "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)";
      const insert = db.prepare(rawInsert(`"${raw}_inbox"`, NOW, () => '?'));
      return {
        client: 'one better-sqlite3 connection (file, WAL)',
        inbox: sqliteStore({ client: db, table: store }).inbox,
        raw: {
          'raw INSERT, prepared': async (key) => void insert.run(...rowValues(key)),
        },
        clean: async () => void db.exec(`DELETE FROM "${store}_inbox"; DELETE FROM "${raw}_inbox";`),
        close: async () => {
          db.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
];

async function measure(accept: Accept, tag: string): Promise<number> {
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < accepts) await accept(`stripe:evt_${tag}_${next++}`);
    }),
  );
  return accepts / (Number(process.hrtime.bigint() - start) / 1e9);
}

const OURS = 'onceonly inbox accept';

async function bench(target: Target): Promise<void> {
  const opened = await target.open();
  try {
    const contenders: [string, Accept][] = [
      ...Object.entries(opened.raw),
      [
        OURS,
        async (key) => {
          const result = await opened.inbox.accept(input(key));
          if (result.status !== 'accepted') throw new Error(`not accepted: ${result.status}`);
        },
      ],
    ];
    // One warm-up pass each (tables created, statements prepared), not counted.
    for (const [i, [, accept]] of contenders.entries()) await measure(accept, `warm${i}`);
    await opened.clean();
    const results = new Map<string, number[]>(contenders.map(([name]) => [name, []]));
    const paired: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const rates = new Map<string, number>();
      for (let k = 0; k < contenders.length; k++) {
        const [name, accept] = contenders[(round + k) % contenders.length]!;
        const r = await measure(accept, `r${round}`);
        results.get(name)!.push(r);
        rates.set(name, r);
        await opened.clean();
      }
      paired.push(rates.get(OURS)! / Math.max(...Object.keys(opened.raw).map((n) => rates.get(n)!)));
    }
    const rate = (name: string) => median(results.get(name)!);
    const floor = Math.max(...Object.keys(opened.raw).map(rate));
    console.log(
      `\n${target.label} inbox accept: ${accepts.toLocaleString('en')} fresh 2 KiB deliveries a round, ${concurrency} in flight on ${opened.client}, median of ${rounds} rotating rounds\n`,
    );
    console.table(
      contenders.map(([name]) => ({
        contender: name,
        'accepts/s': Math.round(rate(name)),
        'vs the faster raw INSERT': `${(rate(name) / floor).toFixed(2)}x`,
      })),
    );
    const verdict = median(paired);
    console.log(
      `${target.label}: onceonly accept vs raw INSERT of the same row: ${(rate(OURS) / floor).toFixed(2)}x of the medians, ${verdict.toFixed(2)}x median of per-round ratios (${paired.map((r) => r.toFixed(2)).join(' ')}) (target >= 0.8x: ${verdict >= 0.8 ? 'OK' : 'MISSED'})`,
    );
  } finally {
    await opened.close();
  }
}

const wanted = process.env.BENCH_STORES?.split(',').map((s) => s.trim());
for (const target of targets) {
  if (!wanted || wanted.includes(target.name)) await bench(target);
}
