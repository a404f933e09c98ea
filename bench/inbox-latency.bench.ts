/**
 * Accept latency with a 30 s handler (issue 11): GitHub fails a delivery it has no answer to within
 * 10 s. The receiver runs on node:http (the `onceonly/node` adapter) on loopback; GitHub-signed
 * deliveries arrive at a steady rate (open loop: each is sent on time whether or not the earlier
 * ones were answered), and the time from send to the full answer is measured per delivery.
 * Contenders, side by side in one run, per store: inline (today), inbox (accept, a worker runs it),
 * hybrid (`inline: '2s'`, then the inbox). Each contender gets a fresh key space.
 *
 *   npm run bench -- inbox-latency        (BENCH_SMALL=1 for a quick run)
 *
 * A store is one line of STORES (the SQL inboxes join when they land).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createClient } from 'redis';
import { webhook } from '../dist/adapters/node.js';
import { createReceiver, memoryStore, type Store } from '../dist/index.js';
import { github } from '../dist/providers/index.js';
import { redisStore } from '../dist/stores/redis.js';
import { demoSecret, eventBody, sign } from '../src/cli/sign.js';
import { servers } from '../test/support/servers.js';

const small = process.env.BENCH_SMALL === '1';
const DELIVERIES = small ? 60 : 300;
/** Deliveries per second, sent on time whatever the answers. */
const RATE = small ? 20 : 30;
const HANDLER_MS = 30_000;
const GITHUB_TIMEOUT_MS = 10_000;
const secret = demoSecret('github');
const run = randomBytes(4).toString('hex');

const client = createClient({ url: servers.redis, disableOfflineQueue: true });
client.on('error', () => {});
const redis = await client.connect().catch(() => undefined);
const STORES: { name: string; open: (prefix: string) => Store }[] = [
  { name: 'memory', open: () => memoryStore() },
  ...(redis ? [{ name: 'redis', open: (prefix: string) => redisStore({ client: redis, prefix }) }] : []),
];
if (!redis) console.log(`(no Redis at ${servers.redis}: memory only)`);

const MODES = [
  { name: 'inline', inbox: undefined },
  { name: 'inbox', inbox: true as const },
  { name: 'hybrid (inline 2 s)', inbox: { inline: '2s' as const } },
];

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });

interface Figures {
  p50: number;
  p99: number;
  max: number;
  within10s: number;
  statuses: Record<string, number>;
}

async function measure(store: Store, inbox: (typeof MODES)[number]['inbox'], tag: string): Promise<Figures> {
  const stop = new AbortController();
  const receiver = createReceiver({
    provider: github({ secret }),
    store,
    logger: false,
    // The handler's 30 s must fit its deadline, inline too.
    timeout: '45s',
    inbox,
    handler: async ({ signal }) => sleep(HANDLER_MS, AbortSignal.any([signal, stop.signal])),
  });
  const worker = inbox ? receiver.startWorker({ concurrency: 8 }) : undefined;
  const server: Server = createServer(webhook(receiver));
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const sent: Promise<void>[] = [];
  const started = performance.now();
  for (let i = 0; i < DELIVERIES; i++) {
    const due = started + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const { id, body } = eventBody('github', `${run}${tag}`, i);
    const signed = sign('github', secret, id, body);
    sent.push(
      (async () => {
        const t0 = performance.now();
        const res = await fetch(url, { method: 'POST', body: signed.body, headers: signed.headers });
        await res.arrayBuffer();
        latencies.push(performance.now() - t0);
        const key = `${res.status} ${res.headers.get('onceonly-outcome')}`;
        statuses[key] = (statuses[key] ?? 0) + 1;
      })(),
    );
  }
  await Promise.all(sent);
  // The 30 s handlers still running (inbox and hybrid workers) are cut short: the figures are in.
  stop.abort();
  await worker?.stop();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  const sorted = latencies.sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return {
    p50: at(0.5),
    p99: at(0.99),
    max: sorted[sorted.length - 1]!,
    within10s: sorted.filter((ms) => ms <= GITHUB_TIMEOUT_MS).length,
    statuses,
  };
}

const fmt = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(1)} ms`);
console.log(
  `Accept latency, 30 s handler, ${DELIVERIES} GitHub-signed deliveries at ${RATE}/s over loopback HTTP (node:http, onceonly/node):`,
);
console.log(
  '  store    mode                  p50        p99        max        answered within 10 s   answers',
);
for (const s of STORES) {
  for (const [i, mode] of MODES.entries()) {
    const f = await measure(s.open(`oo-bench-latency-${run}-${i}:`), mode.inbox, `${s.name}${i}`);
    console.log(
      `  ${s.name.padEnd(8)} ${mode.name.padEnd(20)}  ${fmt(f.p50).padStart(9)}  ${fmt(f.p99).padStart(9)}  ${fmt(f.max).padStart(9)}  ${`${f.within10s}/${DELIVERIES}`.padStart(21)}   ${JSON.stringify(f.statuses)}`,
    );
  }
}
if (redis) {
  // This run's keys only.
  for await (const keys of redis.scanIterator({ MATCH: `oo-bench-latency-${run}-*`, COUNT: 1000 }))
    if ((keys as unknown as string[]).length) await redis.del(keys as unknown as string[]);
  await redis.quit();
}
process.exit(0);
