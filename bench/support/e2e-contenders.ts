/**
 * The contenders of bench/inbox-e2e.bench.ts, shared by its main process (the door: verify and
 * enqueue) and its worker process (take and run): onceonly's inbox on PostgreSQL and on Redis (with
 * either client), and the job queues a user would pick instead: pg-boss and graphile-worker on
 * PostgreSQL, BullMQ on Redis. A peer's door verifies the same HMAC signature and enqueues the parsed
 * event as one job (no dedup option: the queues are spared that cost, onceonly pays it).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { Logger, makeWorkerUtils, run as runGraphile } from 'graphile-worker';
import { Redis } from 'ioredis';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { createClient } from 'redis';
import { createReceiver, hmac, type Store } from '../../dist/index.js';
import { postgresStore } from '../../dist/stores/postgres.js';
import { redisStore } from '../../dist/stores/redis.js';
import { servers } from '../../test/support/servers.js';

export const SECRET = 'bench-secret';
export interface Delivery {
  rawBody: Buffer;
  headers: Record<string, string>;
}
interface Event {
  id: string;
  type: string;
  pad: string;
}

/** A signed 2 KiB delivery of event `id`. */
export function delivery(id: string): Delivery {
  const rawBody = Buffer.from(
    JSON.stringify({ id, type: 'payment_intent.succeeded', pad: 'x'.repeat(1_990) }),
  );
  return {
    rawBody,
    headers: {
      'x-sig': createHmac('sha256', SECRET).update(rawBody).digest('hex'),
      'content-type': 'application/json',
    },
  };
}

/** A peer's door: the same check `hmac()` makes, then the parsed event. */
function verified(d: Delivery): Event {
  const want = createHmac('sha256', SECRET).update(d.rawBody).digest();
  const got = Buffer.from(d.headers['x-sig'] ?? '', 'hex');
  if (got.length !== want.length || !timingSafeEqual(got, want)) throw new Error('bad signature');
  return JSON.parse(d.rawBody.toString('utf8')) as Event;
}

export interface Door {
  accept(d: Delivery): Promise<void>;
  close(): Promise<void>;
}
export interface Workers {
  stop(): Promise<void>;
}
export type Handler = (id: string) => Promise<void> | void;
export interface Contender {
  name: string;
  /** The door, in the main process (creates what the contender needs under `ns`). */
  door(ns: string): Promise<Door>;
  /** The workers, in the worker process. */
  workers(ns: string, concurrency: number, handler: Handler): Promise<Workers>;
  /** Drops everything under `ns`. */
  drop(ns: string): Promise<void>;
}

const provider = () =>
  hmac<Event>({
    name: 'acme',
    secret: SECRET,
    signatureHeader: 'x-sig',
    id: (e) => e.id,
    type: (e) => e.type,
  });

/** onceonly's inbox on a store: the door is `receive()` (202), the workers `startWorker()`. */
function onceonly(
  name: string,
  open: (ns: string) => Promise<{ store: Store; close(): Promise<void> }>,
  drop: (ns: string) => Promise<void>,
): Contender {
  return {
    name,
    async door(ns) {
      const { store, close } = await open(ns);
      const receiver = createReceiver({
        provider: provider(),
        store,
        inbox: true,
        handler: () => {},
        logger: false,
      });
      return {
        async accept(d) {
          const r = await receiver.receive(d);
          if (r.status !== 202) throw new Error(`${name}: answered ${r.status} ${r.outcome}`);
        },
        close,
      };
    },
    async workers(ns, concurrency, handler) {
      const { store, close } = await open(ns);
      const receiver = createReceiver({
        provider: provider(),
        store,
        inbox: true,
        handler: ({ id }) => handler(id!),
        logger: false,
      });
      const worker = receiver.startWorker({ concurrency });
      return {
        async stop() {
          await worker.stop();
          await close();
        },
      };
    },
    drop,
  };
}

const table = (ns: string) => `oo_e2e_${ns}`;
const pgPool = () => new pg.Pool({ connectionString: servers.postgres, max: 10 });
async function pgRun(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: servers.postgres });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

async function redisDel(pattern: string): Promise<void> {
  const r = await createClient({ url: servers.redis }).connect();
  for await (const keys of r.scanIterator({ MATCH: pattern, COUNT: 1000 }))
    if ((keys as unknown as string[]).length) await r.del(keys as unknown as string[]);
  await r.quit();
}

export const contenders: Contender[] = [
  onceonly(
    'onceonly inbox, PostgreSQL',
    async (ns) => {
      const pool = pgPool();
      return { store: postgresStore({ client: pool, table: table(ns) }), close: () => pool.end() };
    },
    (ns) => pgRun(`DROP TABLE IF EXISTS "${table(ns)}_inbox", "${table(ns)}"`),
  ),
  {
    name: 'pg-boss',
    async door(ns) {
      const boss = new PgBoss({ connectionString: servers.postgres, schema: `pgboss_${ns}`, max: 10 });
      boss.on('error', () => {});
      await boss.start();
      await boss.createQueue('evt', { notify: true } as never);
      return {
        async accept(d) {
          await boss.send('evt', verified(d));
        },
        close: () => boss.stop({ graceful: false }),
      };
    },
    async workers(ns, concurrency, handler) {
      const boss = new PgBoss({
        connectionString: servers.postgres,
        schema: `pgboss_${ns}`,
        max: 10,
        useListenNotify: true,
        supervise: false,
        schedule: false,
      } as never);
      boss.on('error', () => {});
      await boss.start();
      // Its fastest set-up here: one fetch of `concurrency` jobs run at once, fetched again at once
      // while fetches come back full (batchSize 1 at localConcurrency 8 waits out the poll, or the
      // 30 s NOTIFY backstop, after every job), woken by NOTIFY when idle.
      await boss.work<Event>(
        'evt',
        { batchSize: concurrency, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 },
        async (jobs) => void (await Promise.all(jobs.map((job) => handler(job.data.id)))),
      );
      return { stop: () => boss.stop({ graceful: true }) };
    },
    drop: (ns) => pgRun(`DROP SCHEMA IF EXISTS pgboss_${ns} CASCADE`),
  },
  {
    name: 'graphile-worker',
    async door(ns) {
      const utils = await makeWorkerUtils({
        connectionString: servers.postgres,
        schema: `gw_${ns}`,
        logger: new Logger(() => () => {}),
      });
      await utils.migrate();
      return {
        async accept(d) {
          await utils.addJob('evt', verified(d));
        },
        close: async () => {
          await utils.release();
        },
      };
    },
    async workers(ns, concurrency, handler) {
      const runner = await runGraphile({
        connectionString: servers.postgres,
        schema: `gw_${ns}`,
        concurrency,
        noHandleSignals: true,
        pollInterval: 1_000,
        logger: new Logger(() => () => {}),
        taskList: { evt: async (payload) => handler((payload as Event).id) },
      });
      return { stop: () => runner.stop() };
    },
    drop: (ns) => pgRun(`DROP SCHEMA IF EXISTS gw_${ns} CASCADE`),
  },
  onceonly(
    'onceonly inbox, Redis (node-redis)',
    async (ns) => {
      const client = createClient({ url: servers.redis, disableOfflineQueue: true });
      client.on('error', () => {});
      await client.connect();
      return {
        store: redisStore({ client, prefix: `oo-e2e-${ns}:` }),
        close: () => client.quit().then(() => {}),
      };
    },
    (ns) => redisDel(`oo-e2e-${ns}:*`),
  ),
  onceonly(
    'onceonly inbox, Redis (ioredis)',
    async (ns) => {
      const client = new Redis(servers.redis, {
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        lazyConnect: true,
      });
      await client.connect();
      return {
        store: redisStore({ client, prefix: `oo-e2e-${ns}:` }),
        close: () => client.quit().then(() => {}),
      };
    },
    (ns) => redisDel(`oo-e2e-${ns}:*`),
  ),
  {
    name: 'BullMQ',
    async door(ns) {
      const connection = new Redis(servers.redis, { maxRetriesPerRequest: null });
      const queue = new Queue(`evt`, { connection, prefix: `bull-e2e-${ns}` });
      return {
        async accept(d) {
          await queue.add('evt', verified(d));
        },
        close: async () => {
          await queue.close();
          connection.disconnect();
        },
      };
    },
    async workers(ns, concurrency, handler) {
      const connection = new Redis(servers.redis, { maxRetriesPerRequest: null });
      const worker = new Worker<Event>('evt', async (job) => handler(job.data.id), {
        connection,
        prefix: `bull-e2e-${ns}`,
        concurrency,
      });
      await worker.waitUntilReady();
      return {
        stop: async () => {
          await worker.close();
          connection.disconnect();
        },
      };
    },
    drop: (ns) => redisDel(`bull-e2e-${ns}:*`),
  },
];
