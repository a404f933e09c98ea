// Redis inbox: accept of fresh 2 KiB deliveries (every key new), 64 in flight, against the same
// client writing the same entry raw: `HSET` of the same fields, `SET` of the same delivery bytes
// and `ZADD` of its due time in one MULTI/EXEC (what an inbox must write at least, atomically; with
// no duplicate check and the client's clock). On node-redis and on ioredis.
// Contenders run in alternating rounds in one process; each figure is the median of its rounds;
// every round's keys are deleted after it (untimed). Target (issue 11): accept >= 0.8x raw.
//
//   npm run bench -- redis-inbox        (BENCH_SMALL=1 for a quick run)
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { redisStore } from '../src/stores/redis.js';
import { servers } from '../test/support/servers.js';
import { body, fingerprint, headers, inboxInput } from './support/inbox-input.js';
import { median } from './support/stats.js';

const small = process.env.BENCH_SMALL === '1';
const accepts = small ? 3_000 : 10_000;
const rounds = small ? 3 : 7;
const concurrency = 64;

const run = `oo-bench-inbox-${randomBytes(4).toString('hex')}`;
const client = await createClient({ url: servers.redis }).connect();
const io = new Redis(servers.redis);

const input = inboxInput;

/** The same entry the inbox writes (hash fields, delivery string), with the client's clock. */
function rawEntry(key: string, receiver: string, seq: number): { fields: string[]; delivery: Buffer } {
  return {
    fields: [
      's',
      'p',
      'f',
      fingerprint,
      'q',
      receiver,
      'o',
      String(seq),
      'a',
      String(Date.now()),
      'ty',
      JSON.stringify('payment_intent.succeeded'),
      'id',
      JSON.stringify(key.slice(key.indexOf(':') + 1)),
    ],
    delivery: Buffer.concat([Buffer.from(`${JSON.stringify([headers, null, Date.now()])}\n`), body]),
  };
}

let seq = 0;
const member = (n: number, key: string) => `${String(n).padStart(15, '0')}|${key}`;
const contenders: Array<{ name: string; accept: (receiver: string, key: string) => Promise<void> }> = [
  {
    name: 'raw node-redis MULTI HSET + SET + ZADD',
    async accept(receiver, key) {
      const base = `${run}:raw:{${receiver}}:`;
      const n = ++seq;
      const { fields, delivery } = rawEntry(key, receiver, n);
      await client
        .multi()
        .hSet(`${base}e:${key}`, fields)
        .set(`${base}b:${key}`, delivery)
        .zAdd(`${base}p:${receiver}`, { score: Date.now(), value: member(n, key) })
        .exec();
    },
  },
  {
    name: 'raw node-redis MULTI (addCommand) HSET + SET + ZADD',
    async accept(receiver, key) {
      // The same transaction through node-redis's untyped addCommand, below its typed helpers.
      const base = `${run}:rawa:{${receiver}}:`;
      const n = ++seq;
      const { fields, delivery } = rawEntry(key, receiver, n);
      await client
        .multi()
        .addCommand(['HSET', `${base}e:${key}`, ...fields])
        .addCommand(['SET', `${base}b:${key}`, delivery])
        .addCommand(['ZADD', `${base}p:${receiver}`, String(Date.now()), member(n, key)])
        .exec();
    },
  },
  {
    name: 'onceonly inbox accept (node-redis)',
    accept: acceptWith(redisStore({ client, prefix: `${run}:oo:`, checkEvictionPolicy: false })),
  },
  {
    name: 'raw ioredis MULTI HSET + SET + ZADD',
    async accept(receiver, key) {
      const base = `${run}:rawio:{${receiver}}:`;
      const n = ++seq;
      const { fields, delivery } = rawEntry(key, receiver, n);
      await io
        .multi()
        .hset(`${base}e:${key}`, ...fields)
        .set(`${base}b:${key}`, delivery)
        .zadd(`${base}p:${receiver}`, Date.now(), member(n, key))
        .exec();
    },
  },
  {
    name: 'onceonly inbox accept (ioredis)',
    accept: acceptWith(redisStore({ client: io, prefix: `${run}:ooio:`, checkEvictionPolicy: false })),
  },
];

function acceptWith(store: ReturnType<typeof redisStore>) {
  const inbox = store.inbox!;
  return async (receiver: string, key: string) => {
    const result = await inbox.accept(input(key, receiver));
    if (result.status !== 'accepted') throw new Error(`not accepted: ${result.status}`);
  };
}

async function measure(accept: (receiver: string, key: string) => Promise<void>, tag: string) {
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < accepts) await accept('stripe', `stripe:evt_${tag}_${next++}`);
    }),
  );
  return accepts / (Number(process.hrtime.bigint() - start) / 1e9);
}

async function clean(): Promise<void> {
  for await (const keys of client.scanIterator({ MATCH: `${run}*`, COUNT: 1000 })) {
    if (keys.length > 0) await client.unlink(keys);
  }
}

const results = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
// One warm-up pass each (scripts loaded, registries written, JIT warm), not counted.
for (const c of contenders) await measure(c.accept, 'warm');
await clean();
for (let round = 0; round < rounds; round++) {
  for (const c of contenders) {
    results.get(c.name)!.push(await measure(c.accept, `r${round}`));
    await clean();
  }
}

const rate = (name: string) => median(results.get(name)!);
// The faster of the two node-redis transactions is the floor.
const rawNr = Math.max(
  rate('raw node-redis MULTI HSET + SET + ZADD'),
  rate('raw node-redis MULTI (addCommand) HSET + SET + ZADD'),
);
const rawIo = rate('raw ioredis MULTI HSET + SET + ZADD');
console.log(
  `\nRedis inbox accept: ${accepts.toLocaleString('en')} fresh 2 KiB deliveries a round, ${concurrency} in flight, median of ${rounds} alternating rounds\n`,
);
console.table(
  contenders.map((c) => {
    const raw = c.name.includes('ioredis') ? rawIo : rawNr;
    return {
      contender: c.name,
      'accepts/s': Math.round(rate(c.name)),
      'vs raw MULTI (same client, faster one)': `${(rate(c.name) / raw).toFixed(2)}x`,
    };
  }),
);
const ours = rate('onceonly inbox accept (node-redis)') / rawNr;
const oursIo = rate('onceonly inbox accept (ioredis)') / rawIo;
console.log(
  `onceonly accept vs raw MULTI HSET + SET + ZADD (node-redis: the faster of typed and addCommand): node-redis ${ours.toFixed(2)}x, ioredis ${oursIo.toFixed(2)}x (target >= 0.8x: ${
    Math.min(ours, oursIo) >= 0.8 ? 'OK' : 'MISSED'
  })`,
);

await clean();
await client.quit();
io.disconnect();
