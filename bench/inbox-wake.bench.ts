/**
 * Accept → handler start with idle workers in ANOTHER process (issue 32): a child process runs a
 * worker (concurrency 8) over PostgreSQL (pg Pool) or Redis (node-redis), idle; this process
 * accepts GitHub-signed deliveries through its own receiver and store (its own client) at a steady
 * rate (open loop, each sent on time), and the time from the accept's 202 in hand to the handler's
 * start in the child is measured per delivery (both sides read the host's monotonic
 * clock, `process.hrtime`). Side by side in one run, per store, in alternating rounds: the store's watch
 * (LISTEN/NOTIFY, pub/sub) against the same worker with the watch hidden, polling every 1 s (the
 * default `pollInterval`, as before the watch).
 *
 *   npm run bench -- inbox-wake        (BENCH_SMALL=1 for a quick run)
 */
import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createClient } from 'redis';
import { createReceiver, type Store } from '../dist/index.js';
import { github } from '../dist/providers/index.js';
import { postgresStore } from '../dist/stores/postgres.js';
import { redisStore } from '../dist/stores/redis.js';
import { demoSecret, eventBody, sign } from '../src/cli/sign.js';
import { servers } from '../test/support/servers.js';

const small = process.env.BENCH_SMALL === '1';
/** Deliveries per contender and round, and rounds. */
const DELIVERIES = small ? 40 : 100;
const ROUNDS = 2;
/** Deliveries per second: far below what the workers take, so they are idle when one comes. */
const RATE = 10;
const run = randomBytes(4).toString('hex');
const secret = demoSecret('github');
// CLOCK_MONOTONIC, one clock for every process on the host. Not performance.timeOrigin + now():
// timeOrigin is the wall clock read at each process's start, and the wall clock drifts from the
// monotonic one (about -0.4 ms per 20 s here), so a child started minutes after its parent read
// its starts several ms early (negative accept → start latencies).
const now = () => Number(process.hrtime.bigint()) / 1e6;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const pool = new pg.Pool({ connectionString: servers.postgres, max: 8 });
const redis = createClient({ url: servers.redis, disableOfflineQueue: true });
redis.on('error', () => {});
await redis.connect();

interface Target {
  name: 'postgres' | 'redis';
  /** Where one contender's entries live: a table or a key prefix of its own. */
  where(tag: string): string;
  store(where: string): Store;
}
const TARGETS: Target[] = [
  {
    name: 'postgres',
    where: (tag) => `oo_bench_wake_${run}_${tag}`,
    store: (table) => postgresStore({ client: pool, table }),
  },
  {
    name: 'redis',
    where: (tag) => `oo-bench-wake-${run}-${tag}:`,
    store: (prefix) => redisStore({ client: redis, prefix, checkEvictionPolicy: false }),
  },
];

/** One contender's round: the child's worker idle, deliveries accepted here, latencies in ms. */
async function measure(
  target: Target,
  mode: 'watch' | 'poll',
  tag: string,
): Promise<{ total: number[]; notified: number[] }> {
  const where = target.where(tag);
  const store = target.store(where);
  const receiver = createReceiver({
    provider: github({ secret }),
    store,
    inbox: true,
    logger: false,
    handler: () => {},
  });
  const child: ChildProcess = fork(
    fileURLToPath(new URL('./support/wake-worker.ts', import.meta.url)),
    [target.name, mode, where],
    { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
  );
  const started = new Map<string, number>();
  const heard = new Map<string, number>();
  let ready!: () => void;
  const isReady = new Promise<void>((resolve) => {
    ready = resolve;
  });
  child.on('message', (message: unknown) => {
    if (message === 'ready') return ready();
    const { id, at, heard: when } = message as { id: string; at: number; heard: number };
    if (started.has(id)) return;
    started.set(id, at);
    heard.set(id, when);
  });
  await isReady;
  const answered = new Map<string, number>();
  const sent: Promise<void>[] = [];
  const begin = performance.now();
  for (let i = 0; i < DELIVERIES; i++) {
    const wait = begin + (i * 1000) / RATE - performance.now();
    if (wait > 0) await sleep(wait);
    const { id: eventId, body } = eventBody('github', `${run}${tag}`, i);
    const signed = sign('github', secret, eventId, body);
    // GitHub's event id, as the handler sees it, is its delivery header.
    const id = (signed.headers as Record<string, string>)['x-github-delivery']!;
    sent.push(
      (async () => {
        const res = await receiver.fetch(
          new Request('http://localhost/webhooks', {
            method: 'POST',
            body: signed.body,
            headers: signed.headers,
          }),
        );
        if (res.status !== 202) throw new Error(`bench: answered ${res.status}, not 202`);
        answered.set(id, now());
      })(),
    );
  }
  await Promise.all(sent);
  const deadline = Date.now() + 5_000;
  while (started.size < DELIVERIES && Date.now() < deadline) await sleep(20);
  child.send('stop');
  await new Promise((resolve) => child.once('exit', resolve));
  await store.close();
  if (started.size < DELIVERIES) throw new Error(`bench: ${started.size} of ${DELIVERIES} ran`);
  return {
    total: [...answered].map(([id, at]) => started.get(id)! - at),
    // The last notification heard before the handler started, from the 202: the notify's leg.
    notified: [...answered].map(([id, at]) => heard.get(id)! - at),
  };
}

const at = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const fmt = (ms: number) => (ms >= 100 ? `${ms.toFixed(0)} ms` : `${ms.toFixed(2)} ms`);
console.log(
  `Accept (202 in hand) → handler start, worker idle in another process, ${DELIVERIES * ROUNDS} GitHub-signed deliveries at ${RATE}/s per contender, ${ROUNDS} alternating rounds:`,
);
console.log('  store      worker                      p50         p90         p99         max');
const cleanup: (() => Promise<unknown>)[] = [];
for (const target of TARGETS) {
  const figures: Record<string, number[]> = { watch: [], poll: [] };
  const notified: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of round % 2 === 0 ? (['watch', 'poll'] as const) : (['poll', 'watch'] as const)) {
      const tag = `${mode[0]}${round}`;
      const { total, notified: legs } = await measure(target, mode, tag);
      figures[mode]!.push(...total);
      if (mode === 'watch') notified.push(...legs);
      if (target.name === 'postgres') {
        const table = target.where(tag);
        cleanup.push(() => pool.query(`DROP TABLE IF EXISTS ${table}_inbox`));
      }
    }
  }
  for (const mode of ['watch', 'poll'] as const) {
    const sorted = figures[mode]!.sort((a, b) => a - b);
    const label =
      mode === 'watch'
        ? target.name === 'redis'
          ? 'watch (pub/sub)'
          : 'watch (LISTEN/NOTIFY)'
        : 'polling every 1 s';
    console.log(
      `  ${target.name.padEnd(10)} ${label.padEnd(27)} ${fmt(at(sorted, 0.5)).padStart(10)}  ${fmt(at(sorted, 0.9)).padStart(10)}  ${fmt(at(sorted, 0.99)).padStart(10)}  ${fmt(sorted[sorted.length - 1]!).padStart(10)}`,
    );
  }
  const legs = notified.sort((a, b) => a - b);
  console.log(
    `  ${''.padEnd(10)} ${'  of which 202 → heard'.padEnd(27)} ${fmt(at(legs, 0.5)).padStart(10)}  ${fmt(at(legs, 0.9)).padStart(10)}  ${fmt(at(legs, 0.99)).padStart(10)}`,
  );
}
for (const drop of cleanup) await drop();
for await (const keys of redis.scanIterator({ MATCH: `oo-bench-wake-${run}-*`, COUNT: 1000 }))
  if ((keys as unknown as string[]).length) await redis.del(keys as unknown as string[]);
await redis.quit();
await pool.end();
process.exit(0);
