// Redis store: claim + confirm with 2 deliveries per event and 64 in flight, against the same
// node-redis client doing raw `SET NX PX` then `SET PX` (and the same on ioredis, for the store on ioredis), and against AWS Powertools idempotency's
// CachePersistenceLayer (makeIdempotent, with a registered Lambda context of 30 s remaining, so it
// deduplicates) on the same client and server. Contenders run in alternating rounds in one process;
// each figure is the median of its rounds. Targets: >= 0.9x raw, >= 1.5x Powertools (issue 4);
// >= 0.8x raw, >= 1.8x Powertools (issue 12). On Valkey 8.1 (started here when scripts/valkey.sh can
// fetch it) the store confirms with a native SET ... IFEQ: the raw pair and the store run there too.
//
//   npx tsx bench/redis.bench.ts              (BENCH_SMALL=1 for a quick run)
import { randomBytes } from 'node:crypto';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { CachePersistenceLayer } from '@aws-lambda-powertools/idempotency/cache';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
// The built package, as users run it (tsx's transform of the sources adds work to every closure).
import { redisStore } from '../dist/stores/redis.js';
import { type RedisInstance, startRedisInstance } from '../test/support/redis-instance.js';
import { servers } from '../test/support/servers.js';
import { valkeyServer } from '../test/support/valkey.js';

const small = process.env.BENCH_SMALL === '1';
const events = small ? 3_000 : 15_000;
const rounds = small ? 3 : 5;
const concurrency = 64;
const deliveriesPerEvent = 2;
const leaseMs = 120_000;
const retentionMs = 3 * 86_400_000;

const run = `oo-bench-${randomBytes(4).toString('hex')}`;
const fingerprint = 'a'.repeat(64);
const client = await createClient({ url: servers.redis }).connect();
const io = new Redis(servers.redis);
const ioPipelined = new Redis(servers.redis, { enableAutoPipelining: true });
// Valkey 8.1 of the bench's own (scripts/valkey.sh), where the store confirms with a native
// SET ... IFEQ instead of the script: the same pair of contenders on it, side by side.
let valkey: RedisInstance | undefined;
try {
  valkey = await startRedisInstance({ server: await valkeyServer(), persist: false });
} catch (err) {
  console.warn(`Valkey 8.1 not run (${err instanceof Error ? err.message : String(err)})`);
}
const valkeyClient = valkey ? await createClient({ url: valkey.url }).connect() : undefined;

/**
 * Delivers every event `deliveriesPerEvent` times (all first deliveries, then the duplicates, as a
 * provider's retries come later) with `concurrency` in flight; returns deliveries per second.
 */
async function measure(deliver: (eventId: string) => Promise<void>, tag: string): Promise<number> {
  const total = events * deliveriesPerEvent;
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await deliver(`${tag}:${next++ % events}`);
    }),
  );
  return total / (Number(process.hrtime.bigint() - start) / 1e9);
}

const onceonly = redisStore({ client, prefix: `${run}:oo:`, checkEvictionPolicy: false });
const onceonlyIo = redisStore({ client: io, prefix: `${run}:io:`, checkEvictionPolicy: false });
const onceonlyIoPipelined = redisStore({
  client: ioPipelined,
  prefix: `${run}:iop:`,
  checkEvictionPolicy: false,
});
/**
 * The bare commands on a node-redis client, through its typed `set()`, with constant values: no
 * token, no owner check, no fingerprint.
 */
const rawPair = (redis: typeof client) => async (eventId: string) => {
  const key = `${run}:raw:${eventId}`;
  const won = await redis.set(key, 'processing', {
    condition: 'NX',
    expiration: { type: 'PX', value: leaseMs },
  });
  if (won === 'OK') await redis.set(key, 'done', { expiration: { type: 'PX', value: retentionMs } });
};

const onValkey = valkeyClient
  ? redisStore({ client: valkeyClient, prefix: `${run}:oo:`, checkEvictionPolicy: false })
  : undefined;
const storeDelivery = (store: typeof onceonly) => async (eventId: string) => {
  const claim = await store.claim(eventId, { leaseMs, fingerprint });
  if (claim.status === 'acquired') {
    if (!(await store.confirm(claim.lease, { retentionMs }))) throw new Error('lease lost');
  }
};

const config = new IdempotencyConfig({ expiresAfterSeconds: retentionMs / 1000 });
type LambdaContext = Parameters<IdempotencyConfig['registerLambdaContext']>[0];
config.registerLambdaContext({ getRemainingTimeInMillis: () => 30_000 } as LambdaContext);
const powertoolsHandle = makeIdempotent(async (_event: { id: string }) => ({ ok: true }), {
  persistenceStore: new CachePersistenceLayer({ client }),
  config,
  keyPrefix: `${run}:pt`,
});

const contenders: Array<{ name: string; deliver: (eventId: string) => Promise<void> }> = [
  {
    name: 'raw node-redis SET NX PX + SET PX',
    deliver: rawPair(client),
  },
  {
    name: 'raw node-redis sendCommand SET NX PX + SET PX',
    async deliver(eventId) {
      // The same bare commands through sendCommand, below node-redis's typed helpers (information:
      // the store sends its commands this way).
      const key = `${run}:raws:${eventId}`;
      const won = await client.sendCommand(['SET', key, 'processing', 'NX', 'PX', String(leaseMs)]);
      if (String(won) === 'OK') await client.sendCommand(['SET', key, 'done', 'PX', String(retentionMs)]);
    },
  },
  {
    name: 'raw ioredis SET NX PX + SET PX',
    async deliver(eventId) {
      // The same bare commands on an ioredis client: the floor for the store on ioredis.
      const key = `${run}:rawio:${eventId}`;
      const won = await io.set(key, 'processing', 'PX', leaseMs, 'NX');
      if (won === 'OK') await io.set(key, 'done', 'PX', retentionMs);
    },
  },
  { name: 'onceonly redisStore (node-redis)', deliver: storeDelivery(onceonly) },
  { name: 'onceonly redisStore (ioredis)', deliver: storeDelivery(onceonlyIo) },
  {
    name: 'onceonly redisStore (ioredis, enableAutoPipelining)',
    deliver: storeDelivery(onceonlyIoPipelined),
  },
  ...(valkeyClient && onValkey
    ? [
        {
          name: 'raw node-redis SET NX PX + SET PX (Valkey 8.1)',
          deliver: rawPair(valkeyClient),
        },
        {
          name: 'onceonly redisStore (node-redis, Valkey 8.1: SET IFEQ confirm)',
          deliver: storeDelivery(onValkey),
        },
      ]
    : []),
  {
    name: 'Powertools CachePersistenceLayer (node-redis)',
    async deliver(eventId) {
      await powertoolsHandle({ id: eventId });
    },
  },
];

const results = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
for (let round = 0; round < rounds; round++) {
  // Rotated: each round starts with another contender, so none always runs first (on a fresh
  // keyspace and a rested machine) or last.
  const order = contenders.map((_, i) => contenders[(i + round) % contenders.length]!);
  for (const contender of order) {
    const rate = await measure(contender.deliver, `r${round}`);
    results.get(contender.name)!.push(rate);
  }
}

// Sanity: every contender deduplicated (one stored key per event for the last round).
const sample = await client.get(`${run}:raw:r0:0`);
if (sample !== 'done') throw new Error('raw contender did not complete');
if ((await onceonly.inspect('r0:0'))?.state !== 'completed') throw new Error('store did not complete');

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const raw = median(results.get(contenders[0]!.name)!);
const powertools = median(results.get(contenders.find((c) => c.name.startsWith('Powertools'))!.name)!);
const rows = contenders.map((c) => {
  const rate = median(results.get(c.name)!);
  return {
    contender: c.name,
    'deliveries/s': Math.round(rate),
    'vs raw': `${(rate / raw).toFixed(2)}x`,
    'vs Powertools': `${(rate / powertools).toFixed(2)}x`,
  };
});
console.log(
  `\nRedis: ${events.toLocaleString('en')} events x ${deliveriesPerEvent} deliveries, ${concurrency} in flight, median of ${rounds} alternating rounds\n`,
);
console.table(rows);
const ours = median(results.get('onceonly redisStore (node-redis)')!);
console.log(
  `onceonly (node-redis) vs raw: ${(ours / raw).toFixed(2)}x (targets >= 0.8x / 0.9x: ${ours / raw >= 0.8 ? 'OK' : 'MISSED'} / ${ours / raw >= 0.9 ? 'OK' : 'MISSED'}); ` +
    `vs Powertools: ${(ours / powertools).toFixed(2)}x (targets >= 1.5x / 1.8x: ${ours / powertools >= 1.5 ? 'OK' : 'MISSED'} / ${ours / powertools >= 1.8 ? 'OK' : 'MISSED'})`,
);
if (onValkey) {
  const oursValkey = median(results.get('onceonly redisStore (node-redis, Valkey 8.1: SET IFEQ confirm)')!);
  const rawValkey = median(results.get('raw node-redis SET NX PX + SET PX (Valkey 8.1)')!);
  console.log(
    `onceonly (node-redis) on Valkey 8.1, native compare-and-set vs raw on Valkey 8.1: ${(oursValkey / rawValkey).toFixed(2)}x (target >= 0.8x: ${oursValkey / rawValkey >= 0.8 ? 'OK' : 'MISSED'})`,
  );
}
const oursIo = median(results.get('onceonly redisStore (ioredis)')!);
const rawIo = median(results.get('raw ioredis SET NX PX + SET PX')!);
console.log(`onceonly (ioredis) vs raw ioredis: ${(oursIo / rawIo).toFixed(2)}x (information: same client)`);

for await (const keys of client.scanIterator({ MATCH: `${run}*`, COUNT: 1000 })) {
  if (keys.length > 0) await client.unlink(keys);
}
// Powertools writes its own key names (keyPrefix + '#' + hash): delete those too.
for await (const keys of client.scanIterator({ MATCH: `${run}:pt#*`, COUNT: 1000 })) {
  if (keys.length > 0) await client.unlink(keys);
}
await client.quit();
await valkeyClient?.quit();
await valkey?.destroy();
io.disconnect();
ioPipelined.disconnect();
