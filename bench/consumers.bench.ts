// Queue consumers (issue 33): a queue filled ahead with 1 KiB messages, drained by the consumer
// written by hand (acknowledge after the handler) and by the onceonly adapter (once() per message:
// a claim and a confirm on the store, then the acknowledgement), with the same concurrency and a
// no-op handler: the adapter's whole cost shows. Stores: memory, and Redis (node-redis, ioredis);
// beside them the hand-written consumer deduplicating with `SET <id> NX EX 86400` (node-redis), what
// the adapter on Redis is also compared with.
// Contenders run in alternating rounds in one process; each figure is the median of its rounds.
// Target: the adapter at least 0.8x the hand-written consumer's throughput.
//
// SQS runs on ElasticMQ 0.7.1 (started by its kit, memory store only).
//
//   npm run bench -- consumers        (BENCH_SMALL=1 for a quick run; BENCH_ONLY=amqp for one broker)
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import type { Store } from '../src/once.js';
import { memoryStore } from '../src/stores/memory.js';
import { redisStore } from '../src/stores/redis.js';
import { servers } from '../test/support/servers.js';
import type { BenchKit } from './support/consumers/kit.js';
import { median } from './support/stats.js';

const small = process.env.BENCH_SMALL === '1';
const messages = small ? 2_000 : 10_000;
const rounds = small ? 3 : 5;
const concurrency = 64;
const body = randomBytes(1024);
const only = process.env.BENCH_ONLY;

/** The brokers: each a module of support/consumers/ exporting `kit` and `close`. */
const BROKERS = ['amqp', 'bullmq', 'mqtt', 'nats', 'sqs'] as const;

const redis = createClient({ url: servers.redis, disableOfflineQueue: true });
redis.on('error', (error) => console.error('redis:', error.message));
await redis.connect();
// Created as docs/redis.md asks (fail fast through an outage), so the store does not warn each round.
const io = new Redis(servers.redis, {
  lazyConnect: true,
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  retryStrategy: (times) => Math.min(50 * 2 ** times, 2_000),
});
await io.connect();
const run = `oo-bench-consumers-${randomBytes(4).toString('hex')}`;

/**
 * The dedup a consumer written by hand does today: `SET <id> NX EX 86400` before its work (node-redis,
 * one round trip a message; the work skipped when the key was there).
 */
const setNx = (broker: string) => async (id: string, work: () => void) => {
  if ((await redis.set(`${run}:nx:${broker}:${id}`, '1', { NX: true, EX: 86_400 })) !== null) work();
};

async function drain(kit: BenchKit, c: Contender, round: number, name: string): Promise<number> {
  const queue = `${run}-${name}-${round}`;
  await kit.setup(queue);
  await kit.fill(queue, messages, `${queue}-m`, body);
  let handled = 0;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => {
    done = resolve;
  });
  const started = performance.now();
  const work = () => {
    if (++handled === messages) done();
  };
  const { dedup } = c;
  const stop = await kit.consume(queue, concurrency, dedup ? (id) => dedup(id, work) : work, c.store());
  await finished;
  const seconds = (performance.now() - started) / 1_000;
  await stop();
  await kit.teardown(queue);
  return messages / seconds;
}

interface Contender {
  readonly name: string;
  readonly store: () => Store | undefined;
  /** By hand only: what the handler does before its work. */
  readonly dedup?: (id: string, work: () => void) => Promise<void>;
}

for (const broker of BROKERS) {
  if (only && only !== broker) continue;
  const { kit, close } = (await import(`./support/consumers/${broker}.ts`)) as {
    kit: BenchKit;
    close: () => Promise<void>;
  };
  const contenders: Contender[] = [
    { name: 'by hand (ack after the handler)', store: () => undefined },
    { name: 'onceonly, memory store', store: () => memoryStore() },
    {
      name: 'onceonly, Redis (node-redis)',
      store: () => redisStore({ client: redis, prefix: `${run}:${broker}` }),
    },
    {
      name: 'onceonly, Redis (ioredis)',
      store: () => redisStore({ client: io, prefix: `${run}:${broker}:io` }),
    },
  ];
  if (kit.memoryOnly) contenders.splice(2);
  // The same hand-written consumer deduplicating as users do today, beside the adapter on Redis:
  // what a Redis round trip a message costs on this machine, with no lease and no confirm.
  else
    contenders.push({
      name: 'by hand + SET NX EX (node-redis)',
      store: () => undefined,
      dedup: setNx(broker),
    });
  const figures = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  for (let round = 0; round < rounds; round++) {
    // Alternating order, so neither side always runs on a warmer broker.
    const order = round % 2 === 0 ? contenders : [...contenders].reverse();
    for (const c of order) figures.get(c.name)!.push(await drain(kit, c, round, c.name.replace(/\W+/g, '_')));
  }
  const base = median(figures.get(contenders[0]!.name)!);
  console.log(
    `\n${kit.name}: ${messages} messages of 1 KiB, ${concurrency} at once, median of ${rounds} rounds`,
  );
  // The adapter on Redis also against the hand-written consumer that deduplicates on Redis.
  const nx = contenders.find((c) => c.dedup);
  const nxBase = nx ? median(figures.get(nx.name)!) : undefined;
  for (const c of contenders) {
    const m = median(figures.get(c.name)!);
    const vsNx =
      nxBase && c.name.includes('Redis') && !c.dedup ? `  ${(m / nxBase).toFixed(2)}x of SET NX` : '';
    console.log(
      `  ${c.name.padEnd(36)} ${Math.round(m).toLocaleString('en-US').padStart(8)} msg/s  ${(m / base).toFixed(2)}x${vsNx}`,
    );
  }
  await close();
}
// The claims the rounds left (tens of thousands: deleted a thousand at a time).
const keys = await redis.keys(`${run}*`);
for (let i = 0; i < keys.length; i += 1_000) await redis.del(keys.slice(i, i + 1_000));
await redis.quit();
io.disconnect();
