/** BullMQ (ioredis): a queue filled with addBulk, drained by a Worker with `concurrency` jobs at once. */
import { randomBytes } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { onceProcessor } from '../../../src/consumers/bullmq.js';
import { servers } from '../../../test/support/servers.js';
import type { BenchKit } from './kit.js';

const { hostname, port } = new URL(servers.redis);
const connection = { host: hostname, port: Number(port || 6379), maxRetriesPerRequest: null };
const prefix = `oo_bench_bull_${randomBytes(4).toString('hex')}`;
const redis = new Redis(servers.redis);

export const kit: BenchKit = {
  name: 'BullMQ (ioredis)',
  setup: async () => {},
  async fill(queue, n, ids, body) {
    const q = new Queue(queue, { connection, prefix });
    const data = { body: Buffer.from(body).toString('base64') };
    for (let i = 0; i < n; i += 1_000)
      await q.addBulk(
        Array.from({ length: Math.min(1_000, n - i) }, (_, j) => ({
          name: 'm',
          data,
          opts: { jobId: `${ids}-${i + j}` },
        })),
      );
    await q.close();
  },
  async consume(queue, concurrency, handler, store) {
    const worker = new Worker(
      queue,
      store === undefined
        ? // As a processor is written by hand: the handler awaited, then the job completes.
          async (job) => {
            await handler(String(job.id));
          }
        : onceProcessor(store, () => handler(''), { logger: false }),
      { connection, prefix, concurrency },
    );
    worker.on('error', () => {});
    return () => worker.close();
  },
  async teardown(queue) {
    const keys = await redis.keys(`${prefix}:${queue}:*`);
    for (let i = 0; i < keys.length; i += 1_000) await redis.del(keys.slice(i, i + 1_000));
  },
};

export async function close(): Promise<void> {
  await redis.quit();
}
