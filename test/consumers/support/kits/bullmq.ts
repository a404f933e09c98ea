/**
 * The chaos kit of BullMQ: one queue, `onceProcessor` in a Worker whose lock and stall check are
 * short (a SIGKILLed worker's jobs are found stalled within about 3 s, not BullMQ's default 30 s)
 * and whose stall limit leaves the verdict to the adapter; the failed set as the dead letters. Jobs
 * are added without a job id (BullMQ would drop a second add of a kept id), so a copy is a job of
 * its own, keyed on the event id in its data.
 */
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { onceProcessor } from '../../../../src/consumers/bullmq.js';
import { servers } from '../../../support/servers.js';
import { type ChaosKit, IN_FLIGHT } from '../chaos.js';

const { hostname, port } = new URL(servers.redis);
const connection = { host: hostname, port: Number(port || 6379), maxRetriesPerRequest: null };
const NAME = 'chaos';
const bullPrefix = (prefix: string) => `${prefix}_bull`;
type Data = { id: string };

async function withQueue<T>(prefix: string, fn: (queue: Queue<Data>) => Promise<T>): Promise<T> {
  const queue = new Queue<Data>(NAME, { connection, prefix: bullPrefix(prefix) });
  try {
    return await fn(queue);
  } finally {
    await queue.close();
  }
}

export const kit: ChaosKit = {
  name: 'bullmq',
  setup: async () => {},
  publish: (prefix, ids) =>
    withQueue(
      prefix,
      async (queue) => void (await queue.addBulk(ids.map((id) => ({ name: 'm', data: { id } })))),
    ),
  deadLettered: (prefix) =>
    withQueue(prefix, async (queue) => (await queue.getFailed(0, -1)).map((job) => job.data.id)),
  async teardown(prefix) {
    const redis = new Redis(servers.redis);
    try {
      const keys = await redis.keys(`${bullPrefix(prefix)}:*`);
      if (keys.length > 0) await redis.del(keys);
    } finally {
      await redis.quit();
    }
  },
  async consume(prefix, store, work, { confirmed, ...options }) {
    const worker = new Worker<Data>(
      NAME,
      onceProcessor(store, (job, ctx) => work(job.data.id, ctx), {
        ...options,
        key: (job) => `chaos:${job.data.id}`,
        onResult: (job, result) => {
          if (result.outcome === 'processed') confirmed(job.data.id, result.attempt);
        },
      }),
      {
        connection,
        prefix: bullPrefix(prefix),
        concurrency: IN_FLIGHT,
        lockDuration: 2_000,
        stalledInterval: 1_000,
        // Above maxAttempts: a job whose runs keep being killed is dead-lettered by the adapter,
        // with its reason, before BullMQ's own stall limit would fail it.
        maxStalledCount: 20,
      },
    );
    worker.on('error', () => {});
    return () => worker.close();
  },
};
