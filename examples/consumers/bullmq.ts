/**
 * onceonly/bullmq on Redis: three orders, one of them added twice and one whose work fails on its
 * first attempt. Each result is printed as it comes; once every job is settled the worker closes,
 * the queue is obliterated, and the process exits (exit code 1 if that takes over 30 s).
 *
 * Run it from the repository root: `npx tsx examples/consumers/bullmq.ts` (Redis at REDIS_URL,
 * default redis://127.0.0.1:6379). It imports the package by name, as your app would.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout } from 'node:timers/promises';
import { Queue, Worker } from 'bullmq';
import { onceProcessor } from 'onceonly/bullmq';
import { memoryStore } from 'onceonly/memory';

type Order = { id: string };

const { hostname, port } = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const connection = { host: hostname, port: Number(port || 6379), maxRetriesPerRequest: null }; // as BullMQ's workers need
const name = `orders-${randomBytes(4).toString('hex')}`;
const orders: Order[] = [{ id: 'order-1' }, { id: 'order-2' }, { id: 'order-3' }, { id: 'order-1' }]; // the last a copy

let unsettled = orders.length;
let allSettled = () => {};
const settled = new Promise<void>((resolve) => {
  allSettled = resolve;
});

const queue = new Queue<Order>(name, { connection });
const store = memoryStore(); // one process only; use redisStore / postgresStore when you run several
const worker = new Worker<Order>(
  name,
  onceProcessor(
    store,
    async (job, { attempt }) => {
      if (job.data.id === 'order-2' && attempt === 1) throw new Error('the warehouse did not answer');
      // ship(job.data): your work, run once per order id
    },
    {
      // The order's own id: jobs added without a jobId are numbered, so the copy is another job.
      key: (job) => `orders:${job.data.id}`,
      retryDelay: '500ms', // through BullMQ's delayed set
      onResult: (job, result) => {
        const attempt = 'attempt' in result ? ` (attempt ${result.attempt})` : '';
        console.log(`${job.data.id}: ${result.outcome}${attempt}`);
        if ((result.outcome === 'processed' || result.outcome === 'duplicate') && --unsettled === 0)
          allSettled();
      },
    },
  ),
  { connection, concurrency: 16, maxStalledCount: 10 }, // maxStalledCount: at least 2 × maxAttempts
);
worker.on('error', (error) => console.error('bullmq:', error.message));

for (const order of orders) await queue.add('order', order);

const timedOut = await Promise.race([settled.then(() => false), setTimeout(30_000, true, { ref: false })]);
await worker.close(); // waits for the runs it started
await queue.obliterate({ force: true });
await queue.close();
if (timedOut) {
  console.error(`timed out: ${unsettled} job(s) not settled`);
  process.exitCode = 1;
}
