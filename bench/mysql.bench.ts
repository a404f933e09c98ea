// MySQL/MariaDB store: claim + confirm per event against a raw `INSERT IGNORE` (and a raw
// `INSERT ... ON DUPLICATE KEY UPDATE` no-op) followed by an `UPDATE`, all on the same mysql2 pool at
// the same concurrency, measured in rounds of rotating order in one run. Target: the store at no less than
// 0.9x raw.
//
//   npx tsx bench/mysql.bench.ts              (BENCH_SMALL=1 for a quick run)
import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import { mysqlStore } from '../src/stores/mysql.js';
import { servers } from '../test/support/servers.js';
import { median } from './support/stats.js';

const small = process.env.BENCH_SMALL === '1';
const events = small ? 1_000 : 3_000;
const rounds = small ? 5 : 15;
const concurrency = 32;
const poolSize = 10;

const run = randomBytes(4).toString('hex');
const storeTable = `oo_bench_${run}`;
const rawTable = `oo_bench_raw_${run}`;
const pool = mysql.createPool({ uri: servers.mysql, connectionLimit: poolSize });

/** Runs `work(i)` for `count` items with `concurrency` in flight; returns operations per second. */
async function measure(count: number, work: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await work(next++);
    }),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return count / seconds;
}

type Contender = { name: string; event(prefix: string, i: number): Promise<void> };

const NOW = "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000)";

async function main(): Promise<void> {
  const store = mysqlStore({ client: pool, table: storeTable });
  const unprepared = mysqlStore({ client: pool, table: storeTable, prepare: false });
  await store.ready();
  // The raw contenders get the same columns and index as the store's table, keyed by the key itself.
  await pool.query(
    `CREATE TABLE \`${rawTable}\` (
       record_key VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
       state TINYINT NOT NULL, token VARCHAR(64) CHARACTER SET ascii NOT NULL, attempt INT UNSIGNED NOT NULL,
       fingerprint VARBINARY(512) NULL, expires_at BIGINT NOT NULL, updated_at BIGINT NOT NULL,
       KEY (expires_at)
     ) ENGINE=InnoDB`,
  );
  const fingerprint = 'a'.repeat(64);
  const update = `UPDATE \`${rawTable}\` SET state = 1, expires_at = ${NOW} + 259200000, updated_at = ${NOW}
    WHERE record_key = ? AND token = ?`;

  const contenders: Contender[] = [
    {
      name: 'raw INSERT IGNORE + UPDATE',
      async event(prefix, i) {
        const key = `${prefix}:${i}`;
        const token = randomBytes(16).toString('hex');
        await pool.query(
          `INSERT IGNORE INTO \`${rawTable}\` (record_key, state, token, attempt, fingerprint, expires_at, updated_at)
           VALUES (?, 0, ?, 1, ?, ${NOW} + 120000, ${NOW})`,
          [key, token, fingerprint],
        );
        await pool.query(update, [key, token]);
      },
    },
    {
      name: 'raw INSERT ... ON DUPLICATE KEY UPDATE no-op + UPDATE',
      async event(prefix, i) {
        const key = `${prefix}:${i}`;
        const token = randomBytes(16).toString('hex');
        await pool.query(
          `INSERT INTO \`${rawTable}\` (record_key, state, token, attempt, fingerprint, expires_at, updated_at)
           VALUES (?, 0, ?, 1, ?, ${NOW} + 120000, ${NOW}) ON DUPLICATE KEY UPDATE record_key = record_key`,
          [key, token, fingerprint],
        );
        await pool.query(update, [key, token]);
      },
    },
    {
      name: 'raw INSERT IGNORE + UPDATE, prepared (execute)',
      async event(prefix, i) {
        const key = `${prefix}:${i}`;
        const token = randomBytes(16).toString('hex');
        await pool.execute(
          `INSERT IGNORE INTO \`${rawTable}\` (record_key, state, token, attempt, fingerprint, expires_at, updated_at)
           VALUES (?, 0, ?, 1, ?, ${NOW} + 120000, ${NOW})`,
          [key, token, fingerprint],
        );
        await pool.execute(update, [key, token]);
      },
    },
    {
      name: 'mysqlStore claim + confirm (prepare: false, text protocol)',
      async event(prefix, i) {
        const claim = await unprepared.claim(`${prefix}:${i}`, { leaseMs: 120_000, fingerprint });
        if (claim.status !== 'acquired') throw new Error(`unexpected ${claim.status}`);
        await unprepared.confirm(claim.lease, { retentionMs: 3 * 86_400_000 });
      },
    },
    {
      name: 'mysqlStore claim + confirm (default: prepared)',
      async event(prefix, i) {
        const claim = await store.claim(`${prefix}:${i}`, { leaseMs: 120_000, fingerprint });
        if (claim.status !== 'acquired') throw new Error(`unexpected ${claim.status}`);
        await store.confirm(claim.lease, { retentionMs: 3 * 86_400_000 });
      },
    },
  ];

  // Warm-up: connections opened, buffer pool and caches filled.
  for (const c of contenders) await measure(500, (i) => c.event(`warm:${c.name}`, i));

  const results = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  // Many short rounds in rotating order, so drifting load on a shared machine hits every contender alike.
  for (let r = 0; r < rounds; r++) {
    const shift = r % contenders.length;
    for (const c of [...contenders.slice(shift), ...contenders.slice(0, shift)]) {
      results.get(c.name)!.push(await measure(events, (i) => c.event(`r${r}:${c.name}`, i)));
    }
  }

  const raw = median(results.get(contenders[0]!.name)!);
  const [version] = await pool.query('SELECT VERSION() AS v');
  console.log(
    `\n${(version as { v: string }[])[0]!.v}, ${events} events x ${rounds} rounds, ${concurrency} in flight, mysql2 pool of ${poolSize}\n`,
  );
  const rawPrepared = median(results.get(contenders[2]!.name)!);
  // The load of a shared machine drifts between rounds; a ratio taken within each round, where the
  // contenders ran back to back, and then its median, is steadier than a ratio of medians.
  const perRound = (name: string, base: string) => {
    const xs = results.get(name)!;
    const bs = results.get(base)!;
    return median(xs.map((x, r) => x / bs[r]!));
  };
  console.log(
    '| contender | events/s (median) | vs raw (query) | vs raw prepared (execute) | per-round median vs raw | per-round median vs raw prepared | rounds (events/s) |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | --- |');
  for (const c of contenders) {
    const xs = results.get(c.name)!;
    const m = median(xs);
    console.log(
      `| ${c.name} | ${Math.round(m)} | ${(m / raw).toFixed(2)}x | ${(m / rawPrepared).toFixed(2)}x | ${perRound(c.name, contenders[0]!.name).toFixed(2)}x | ${perRound(c.name, contenders[2]!.name).toFixed(2)}x | ${xs.map((x) => Math.round(x)).join(', ')} |`,
    );
  }
}

try {
  await main();
} finally {
  await pool.query(`DROP TABLE IF EXISTS \`${storeTable}\`, \`${storeTable}_versions\`, \`${rawTable}\``);
  await pool.end();
}
