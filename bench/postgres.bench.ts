// PostgreSQL store: claim + confirm per event against a raw `INSERT ... ON CONFLICT DO NOTHING`
// followed by an `UPDATE`, both on the same pg Pool at the same concurrency, measured in alternating
// rounds in one run. Target: the store at no less than 0.9x raw.
//
//   npx tsx bench/postgres.bench.ts              (BENCH_SMALL=1 for a quick run)
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { postgresStore } from '../src/stores/postgres.js';
import { servers } from '../test/support/servers.js';
import { median } from './support/stats.js';

const small = process.env.BENCH_SMALL === '1';
// Many short rounds, contenders in rotating order within each: on a shared machine the load drifts,
// and a ratio taken inside one round compares contenders under the same load.
const events = small ? 1_000 : 4_000;
const rounds = small ? 4 : 20;
const concurrency = 32;
const poolSize = 10;

const run = randomBytes(4).toString('hex');
const storeTable = `oo_bench_${run}`;
const rawTable = `oo_bench_raw_${run}`;
const pool = new pg.Pool({ connectionString: servers.postgres, max: poolSize });

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

async function main(): Promise<void> {
  const store = postgresStore({ client: pool, table: storeTable });
  const unprepared = postgresStore({ client: pool, table: storeTable, prepare: false });
  await store.ready();
  // The raw contender gets the same columns and index as the store's table.
  await pool.query(
    `CREATE TABLE "${rawTable}" (key text PRIMARY KEY, state text NOT NULL, token text NOT NULL,
       attempt integer NOT NULL, fingerprint text, expires_at timestamptz NOT NULL, updated_at timestamptz NOT NULL);
     CREATE INDEX ON "${rawTable}" (expires_at);`,
  );
  const fingerprint = 'a'.repeat(64);

  const contenders: Contender[] = [
    {
      name: 'raw INSERT ON CONFLICT DO NOTHING + UPDATE',
      async event(prefix, i) {
        const key = `${prefix}:${i}`;
        await pool.query(
          `INSERT INTO "${rawTable}" (key, state, token, attempt, fingerprint, expires_at, updated_at)
           VALUES ($1, 'processing', $2, 1, $3, clock_timestamp() + interval '2 minutes', clock_timestamp())
           ON CONFLICT DO NOTHING`,
          [key, randomBytes(16).toString('hex'), fingerprint],
        );
        await pool.query(
          `UPDATE "${rawTable}" SET state = 'completed', expires_at = clock_timestamp() + interval '3 days',
             updated_at = clock_timestamp() WHERE key = $1`,
          [key],
        );
      },
    },
    {
      name: 'raw, as named prepared statements',
      async event(prefix, i) {
        const key = `${prefix}:${i}`;
        await pool.query({
          name: `bench_raw_insert_${run}`,
          text: `INSERT INTO "${rawTable}" (key, state, token, attempt, fingerprint, expires_at, updated_at)
           VALUES ($1, 'processing', $2, 1, $3, clock_timestamp() + interval '2 minutes', clock_timestamp())
           ON CONFLICT DO NOTHING`,
          values: [key, randomBytes(16).toString('hex'), fingerprint],
        });
        await pool.query({
          name: `bench_raw_update_${run}`,
          text: `UPDATE "${rawTable}" SET state = 'completed', expires_at = clock_timestamp() + interval '3 days',
             updated_at = clock_timestamp() WHERE key = $1`,
          values: [key],
        });
      },
    },
    {
      name: 'postgresStore claim + confirm',
      async event(prefix, i) {
        const claim = await store.claim(`${prefix}:${i}`, { leaseMs: 120_000, fingerprint });
        if (claim.status !== 'acquired') throw new Error(`unexpected ${claim.status}`);
        await store.confirm(claim.lease, { retentionMs: 3 * 86_400_000 });
      },
    },
    {
      name: 'postgresStore claim + confirm (prepare: false)',
      async event(prefix, i) {
        const claim = await unprepared.claim(`${prefix}:${i}`, { leaseMs: 120_000, fingerprint });
        if (claim.status !== 'acquired') throw new Error(`unexpected ${claim.status}`);
        await unprepared.confirm(claim.lease, { retentionMs: 3 * 86_400_000 });
      },
    },
  ];

  // Warm-up: connections opened, statements prepared, caches filled.
  for (const c of contenders) await measure(500, (i) => c.event(`warm:${c.name}`, i));

  const results = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < contenders.length; k++) {
      const c = contenders[(r + k) % contenders.length]!;
      results.get(c.name)!.push(await measure(events, (i) => c.event(`r${r}:${c.name}`, i)));
    }
  }

  /** Median over rounds of this contender's rate divided by the other's in the same round. */
  const ratio = (of: string, to: string) => {
    const a = results.get(of)!;
    const b = results.get(to)!;
    return median(a.map((x, i) => x / b[i]!));
  };
  const [raw, rawPrepared] = [contenders[0]!.name, contenders[1]!.name];
  const version = (await pool.query('SHOW server_version')).rows[0].server_version;
  console.log(
    `\nPostgreSQL ${version}, ${rounds} rounds x ${events} events, ${concurrency} in flight, pg Pool max ${poolSize}\n`,
  );
  console.log('| contender | events/s (median) | min .. max | vs raw | vs raw prepared |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  for (const c of contenders) {
    const xs = results.get(c.name)!;
    console.log(
      `| ${c.name} | ${Math.round(median(xs))} | ${Math.round(Math.min(...xs))} .. ${Math.round(Math.max(...xs))} | ${ratio(c.name, raw).toFixed(2)}x | ${ratio(c.name, rawPrepared).toFixed(2)}x |`,
    );
  }
  console.log('\nRatios are medians of per-round ratios (each round runs every contender back to back).');
}

try {
  await main();
} finally {
  await pool.query(`DROP TABLE IF EXISTS "${storeTable}", "${storeTable}_versions", "${rawTable}"`);
  await pool.end();
}
