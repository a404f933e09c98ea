/**
 * The worker process of bench/inbox-wake.bench.ts: a GitHub receiver in inbox mode over PostgreSQL
 * (pg Pool) or Redis (node-redis), its worker idle until a delivery comes, the handler sending the
 * time it started (`process.hrtime`: CLOCK_MONOTONIC, one clock for every process on the host) to
 * the parent over IPC. `watch` uses the store's watch; `poll` hides it (the worker polls every 1 s).
 *
 *   node --import tsx bench/support/wake-worker.ts <postgres|redis> <watch|poll> <table or prefix>
 */
import pg from 'pg';
import { createClient } from 'redis';
import { createReceiver, type Store } from '../../dist/index.js';
import { github } from '../../dist/providers/index.js';
import { postgresStore } from '../../dist/stores/postgres.js';
import { redisStore } from '../../dist/stores/redis.js';
import { demoSecret } from '../../src/cli/sign.js';
import { servers } from '../../test/support/servers.js';

const [kind, mode, where] = process.argv.slice(2) as ['postgres' | 'redis', 'watch' | 'poll', string];
const send = (message: unknown) => process.send?.(message);
// CLOCK_MONOTONIC, one clock for every process on the host. Not performance.timeOrigin + now():
// timeOrigin is the wall clock read at each process's start, and the wall clock drifts from the
// monotonic one (about -0.4 ms per 20 s here), so a child started minutes after its parent read
// its starts several ms early (negative accept → start latencies).
const now = () => Number(process.hrtime.bigint()) / 1e6;

let store: Store;
let end: () => Promise<unknown>;
if (kind === 'postgres') {
  const pool = new pg.Pool({ connectionString: servers.postgres, max: 4 });
  store = postgresStore({ client: pool, table: where });
  end = () => pool.end();
} else {
  const client = createClient({ url: servers.redis, disableOfflineQueue: true });
  client.on('error', () => {});
  await client.connect();
  store = redisStore({ client, prefix: where, checkEvictionPolicy: false });
  end = () => client.quit();
}

/** The store's inbox without its watch: the worker polls, as before the watch. */
function withoutWatch(s: Store): Store {
  const box = s.inbox!;
  const inbox: NonNullable<Store['inbox']> = {
    accept: box.accept.bind(box),
    take: box.take.bind(box),
    extend: box.extend.bind(box),
    complete: box.complete.bind(box),
    retry: box.retry.bind(box),
    bury: box.bury.bind(box),
    stats: box.stats.bind(box),
    list: box.list.bind(box),
    get: box.get.bind(box),
    requeue: box.requeue.bind(box),
    purge: box.purge.bind(box),
    steps: box.steps,
  };
  return new Proxy(s, { get: (target, key) => (key === 'inbox' ? inbox : Reflect.get(target, key)) });
}

// When the watch last said an entry may be due: the accept → notification leg of a delivery's time.
let heard = 0;
const box = store.inbox!;
const watch = box.watch?.bind(box);
if (watch) {
  box.watch = (receiver, watcher) =>
    watch(receiver, {
      ...watcher,
      due: () => {
        heard = now();
        watcher.due();
      },
    });
}

const receiver = createReceiver({
  provider: github({ secret: demoSecret('github') }),
  store: mode === 'watch' ? store : withoutWatch(store),
  inbox: true,
  logger: false,
  handler: ({ id }) => {
    send({ id, at: now(), heard });
  },
});
await store.inbox!.stats(); // the table made, the connection up
const worker = receiver.startWorker({ concurrency: 8, pollInterval: '1s' });
process.on('message', async (message) => {
  if (message !== 'stop') return;
  await worker.stop();
  await store.close();
  await end();
  process.exit(0);
});
// Time for the watch connection to open (a poll interval covers the poll's first take).
setTimeout(() => send('ready'), 1_500);
