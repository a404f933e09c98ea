// Redis store: claim + confirm with 2 deliveries per event and 64 in flight, against the same
// node-redis client doing raw `SET NX PX` then `SET PX` (and the same on ioredis, for the store on ioredis), and against AWS Powertools idempotency's
// CachePersistenceLayer (makeIdempotent, with a registered Lambda context of 30 s remaining, so it
// deduplicates) on the same client and server. Contenders take turns in short slices of each round in
// one process; a ratio is the median of each round's own (paired) ratio. Targets: >= 0.9x raw, >= 1.5x Powertools (issue 4);
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
import { median } from './support/stats.js';

const small = process.env.BENCH_SMALL === '1';
const events = small ? 3_000 : 15_000;
const rounds = small ? 3 : 5;
const slices = small ? 3 : 10;
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
 * Delivers the events `first` to `first + count - 1` each `deliveriesPerEvent` times (all first
 * deliveries, then the duplicates, as a provider's retries come later) with `concurrency` in
 * flight; returns the seconds it took.
 */
async function measureSlice(
  deliver: (eventId: string) => Promise<void>,
  tag: string,
  first: number,
  count: number,
): Promise<number> {
  const total = count * deliveriesPerEvent;
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await deliver(`${tag}:${first + (next++ % count)}`);
    }),
  );
  return Number(process.hrtime.bigint() - start) / 1e9;
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

/**
 * The floor of any owner-checked confirm on Redis 7 (no SET ... IFEQ): the raw claim, then a minimal
 * script that compares the key with the owner's value and only then writes it done. Constant values,
 * no fingerprint, no takeover: what the store's confirm cannot go below.
 */
const FLOOR_CONFIRM = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 end return 0`;
const floorSha = String(await client.scriptLoad(FLOOR_CONFIRM));
const floorPair = async (eventId: string) => {
  const key = `${run}:floor:${eventId}`;
  const won = await client.sendCommand(['SET', key, 'owner', 'NX', 'PX', String(leaseMs)]);
  if (String(won) !== 'OK') return;
  const confirmed = await client.sendCommand([
    'EVALSHA',
    floorSha,
    '1',
    key,
    'owner',
    'done',
    String(retentionMs),
  ]);
  if (Number(confirmed) !== 1) throw new Error('floor confirm lost its key');
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
  { name: 'floor: SET NX PX + owner-checked EVALSHA confirm (node-redis)', deliver: floorPair },
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

// Each round is cut into slices that the contenders take in turn (the order rotated from slice to
// slice): every contender sees the same stretches of a noisy machine, so a round's ratios are paired.
// A contender's figure for the round is its deliveries over the time its slices took.
const results = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
const perSlice = events / slices;
for (let round = 0; round < rounds; round++) {
  const seconds = new Map<string, number>(contenders.map((c) => [c.name, 0]));
  for (let slice = 0; slice < slices; slice++) {
    const turn = round * slices + slice;
    const order = contenders.map((_, i) => contenders[(i + turn) % contenders.length]!);
    for (const contender of order) {
      const took = await measureSlice(contender.deliver, `r${round}`, slice * perSlice, perSlice);
      seconds.set(contender.name, seconds.get(contender.name)! + took);
    }
  }
  for (const c of contenders) results.get(c.name)!.push((events * deliveriesPerEvent) / seconds.get(c.name)!);
}

// Sanity: every contender deduplicated (one stored key per event for the last round).
const sample = await client.get(`${run}:raw:r0:0`);
if (sample !== 'done') throw new Error('raw contender did not complete');
if ((await onceonly.inspect('r0:0'))?.state !== 'completed') throw new Error('store did not complete');

/** Each round's own ratio of a's rate over b's (paired: the same slices of time). */
const roundRatios = (a: string, b: string) => {
  const rb = results.get(b)!;
  return results.get(a)!.map((rate, i) => rate / rb[i]!);
};
/** The median over rounds of that ratio. */
const ratio = (a: string, b: string) => median(roundRatios(a, b));
/** Its spread over the rounds, as "min-max". */
const spread = (a: string, b: string) => {
  const rs = roundRatios(a, b);
  return `${Math.min(...rs).toFixed(2)}-${Math.max(...rs).toFixed(2)}`;
};
const RAW = contenders[0]!.name;
const POWERTOOLS = contenders.find((c) => c.name.startsWith('Powertools'))!.name;
const rows = contenders.map((c) => ({
  contender: c.name,
  'deliveries/s': Math.round(median(results.get(c.name)!)),
  'vs raw': `${ratio(c.name, RAW).toFixed(2)}x`,
  'vs Powertools': `${ratio(c.name, POWERTOOLS).toFixed(2)}x`,
}));
console.log(
  `\nRedis: ${events.toLocaleString('en')} events x ${deliveriesPerEvent} deliveries, ${concurrency} in flight, ${rounds} rounds of ${slices} slices taken in turn; rates are medians over rounds, ratios medians of each round's own ratio\n`,
);
console.table(rows);
const OURS = 'onceonly redisStore (node-redis)';
const vsRaw = ratio(OURS, RAW);
const vsPowertools = ratio(OURS, POWERTOOLS);
console.log(
  `onceonly (node-redis) vs raw: ${vsRaw.toFixed(2)}x, rounds ${spread(OURS, RAW)} (targets >= 0.8x / 0.9x: ${vsRaw >= 0.8 ? 'OK' : 'MISSED'} / ${vsRaw >= 0.9 ? 'OK' : 'MISSED'}); ` +
    `vs Powertools: ${vsPowertools.toFixed(2)}x, rounds ${spread(OURS, POWERTOOLS)} (targets >= 1.5x / 1.8x: ${vsPowertools >= 1.5 ? 'OK' : 'MISSED'} / ${vsPowertools >= 1.8 ? 'OK' : 'MISSED'})`,
);
const FLOOR = 'floor: SET NX PX + owner-checked EVALSHA confirm (node-redis)';
const vsFloor = ratio(OURS, FLOOR);
console.log(
  `onceonly (node-redis) vs the owner-checked floor on Redis 7 (raw claim + minimal Lua confirm): ${vsFloor.toFixed(2)}x, rounds ${spread(OURS, FLOOR)}; the floor itself is ${ratio(FLOOR, RAW).toFixed(2)}x of raw (information)`,
);
if (onValkey) {
  const OURS_VALKEY = 'onceonly redisStore (node-redis, Valkey 8.1: SET IFEQ confirm)';
  const RAW_VALKEY = 'raw node-redis SET NX PX + SET PX (Valkey 8.1)';
  const v = ratio(OURS_VALKEY, RAW_VALKEY);
  console.log(
    `onceonly (node-redis) on Valkey 8.1, native compare-and-set vs raw on Valkey 8.1: ${v.toFixed(2)}x, rounds ${spread(OURS_VALKEY, RAW_VALKEY)} (target >= 0.8x: ${v >= 0.8 ? 'OK' : 'MISSED'})`,
  );
}
const ioRatio = ratio('onceonly redisStore (ioredis)', 'raw ioredis SET NX PX + SET PX');
console.log(`onceonly (ioredis) vs raw ioredis: ${ioRatio.toFixed(2)}x (information: same client)`);

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
