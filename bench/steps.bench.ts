// Durable steps: once() with a handler of three steps against the same handler without steps, on
// Redis and on PostgreSQL, each event a fresh key (attempt 1: three step writes, no read), in
// alternating rounds in one run; the figure is the cost a step adds, per step.
//
//   npx tsx bench/steps.bench.ts              (BENCH_SMALL=1 for a quick run)
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createClient } from 'redis';
import type { Store } from '../src/core/types.js';
import { type OnceOptions, once } from '../src/once.js';
import { postgresStore } from '../src/stores/postgres.js';
import { redisStore } from '../src/stores/redis.js';
import { servers } from '../test/support/servers.js';
import { median } from './support/stats.js';

const small = process.env.BENCH_SMALL === '1';
const events = small ? 500 : 2_000;
const rounds = small ? 4 : 12;
const concurrency = 32;
const run = randomBytes(4).toString('hex');

/** Runs `work(i)` for `count` items with `concurrency` in flight; returns events per second. */
async function measure(count: number, work: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await work(next++);
    }),
  );
  return count / (Number(process.hrtime.bigint() - start) / 1e9);
}

const quiet: OnceOptions = { logger: false, retention: '10m' };
const ok = (outcome: string) => {
  if (outcome !== 'processed') throw new Error(`bench: ${outcome}`);
};

/** The two handlers: the same three small results, through steps or not. */
const contenders = [
  {
    name: 'three awaits, no steps',
    run: (store: Store, key: string) =>
      once(
        store,
        key,
        async () => {
          const a = await Promise.resolve({ id: 'ch_1' });
          const b = await Promise.resolve({ id: 'em_1' });
          const c = await Promise.resolve({ id: 'sh_1' });
          return [a, b, c];
        },
        quiet,
      ),
  },
  {
    name: 'three steps',
    run: (store: Store, key: string) =>
      once(
        store,
        key,
        async (ctx) => {
          const a = await ctx.step('charge', () => ({ id: 'ch_1' }));
          const b = await ctx.step('email', () => ({ id: 'em_1' }));
          const c = await ctx.step('ship', () => ({ id: 'sh_1' }));
          return [a, b, c];
        },
        quiet,
      ),
  },
];

async function bench(label: string, store: Store): Promise<void> {
  const rates: number[][] = contenders.map(() => []);
  // Warm-up: connections, scripts, prepared statements, JIT.
  for (const c of contenders)
    await measure(200, async (i) => ok((await c.run(store, `w:${run}:${c.name}:${i}`)).outcome));
  for (let r = 0; r < rounds; r++) {
    // Rotating order within each round: a drifting load falls on both alike.
    const order = contenders.map((_, i) => (i + r) % contenders.length);
    for (const i of order) {
      const c = contenders[i]!;
      rates[i]!.push(
        await measure(events, async (n) => ok((await c.run(store, `b:${run}:${r}:${i}:${n}`)).outcome)),
      );
    }
  }
  const [plain, stepped] = rates.map((xs) => median(xs)) as [number, number];
  const ratios = rates[1]!.map((x, i) => x / rates[0]![i]!);
  const perStepUs = (1e6 / stepped - 1e6 / plain) / 3;
  console.log(`${label}, ${events} events x ${rounds} rounds, ${concurrency} in flight:`);
  console.log(`  ${contenders[0]!.name.padEnd(24)} ${Math.round(plain).toLocaleString('en')} events/s`);
  console.log(`  ${contenders[1]!.name.padEnd(24)} ${Math.round(stepped).toLocaleString('en')} events/s`);
  console.log(
    `  steps / no steps: ${median(ratios).toFixed(2)}x (rounds ${Math.min(...ratios).toFixed(2)} to ${Math.max(...ratios).toFixed(2)}); about ${perStepUs.toFixed(0)} µs of throughput per step at this concurrency`,
  );
}

async function main(): Promise<void> {
  const client = await createClient({ url: servers.redis }).connect();
  const redis = redisStore({ client, prefix: `oo-bench-steps-${run}:` });
  await bench('Redis (node-redis)', redis);
  await redis.close();
  const keys = await client.keys(`oo-bench-steps-${run}:*`);
  for (let i = 0; i < keys.length; i += 1000) await client.del(keys.slice(i, i + 1000));
  await client.quit();

  const pool = new pg.Pool({ connectionString: servers.postgres, max: 10 });
  const table = `oo_bench_steps_${run}`;
  const postgres = postgresStore({ client: pool, table });
  await postgres.ready();
  await bench('PostgreSQL (pg, pool of 10)', postgres);
  await postgres.close();
  await pool.query(`DROP TABLE IF EXISTS "${table}", "${table}_versions"`);
  await pool.end();
}

await main();
