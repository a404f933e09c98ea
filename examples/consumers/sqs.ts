/**
 * onceonly/sqs's long-poll consumer on SQS: three orders, one of them sent twice and one whose work
 * fails on its first attempt. Each result is printed as it comes; once every message is settled the
 * consumer stops, the two queues it made are deleted, and the process exits (exit code 1 if that
 * takes over 30 s).
 *
 * Run it from the repository root: `npx tsx examples/consumers/sqs.ts` with your AWS credentials
 * and region (it creates and deletes two queues), or against a local stand-in at SQS_ENDPOINT,
 * such as ElasticMQ (`java -jar elasticmq-server.jar`, then SQS_ENDPOINT=http://127.0.0.1:9324).
 * It imports the package by name, as your app would.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout } from 'node:timers/promises';
import { SQS } from '@aws-sdk/client-sqs';
import { memoryStore } from 'onceonly/memory';
import { consumeOnce, type SqsMessage } from 'onceonly/sqs';

const endpoint = process.env.SQS_ENDPOINT;
const sqs = new SQS(
  endpoint
    ? { endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
    : {},
);
if (endpoint) {
  // A stand-in that speaks SQS's query protocol (ElasticMQ 0.7, with @aws-sdk/client-sqs 3.410)
  // reads the queue from the request's path: send each request to its queue URL.
  sqs.middlewareStack.add(
    (next) => async (args) => {
      const url = (args.input as { QueueUrl?: string }).QueueUrl;
      if (url) (args.request as { path: string }).path = new URL(url).pathname;
      return next(args);
    },
    { step: 'build', name: 'queuePath' },
  );
}

const name = `orders_${randomBytes(4).toString('hex')}`;
const { QueueUrl: queueUrl } = await sqs.createQueue({ QueueName: name });
const { QueueUrl: deadLetterQueueUrl } = await sqs.createQueue({ QueueName: `${name}_dead` });
if (!queueUrl || !deadLetterQueueUrl) throw new Error('createQueue gave no QueueUrl');

const orders = [{ id: 'order-1' }, { id: 'order-2' }, { id: 'order-3' }, { id: 'order-1' }]; // the last a copy
// The order's own id: a copy sent again is another SQS message (another MessageId).
const orderId = (message: SqsMessage) => (JSON.parse(message.Body ?? '{}') as { id: string }).id;

let unsettled = orders.length;
let allSettled = () => {};
const settled = new Promise<void>((resolve) => {
  allSettled = resolve;
});

const store = memoryStore(); // one process only; use redisStore / postgresStore when you run several
const consumer = await consumeOnce(
  sqs,
  queueUrl,
  store,
  async (message, { attempt }) => {
    if (orderId(message) === 'order-2' && attempt === 1) throw new Error('the warehouse did not answer');
    // ship(JSON.parse(message.Body)): your work, run once per order id
  },
  {
    deadLetterQueueUrl, // after maxAttempts (5): a copy with the reason, then the delete
    key: (message) => `orders:${orderId(message)}`,
    retryDelay: '1s', // visible again in 1 s (ChangeMessageVisibility)
    concurrency: 1, // one at a time here, so the copy of order-1 comes after it
    // ElasticMQ 0.7 ends a long poll early for a message sent, not for one visible again (a retry):
    // short polls there. SQS answers a long poll (20 s by default) as soon as either is there.
    ...(endpoint ? { waitTimeSeconds: 1 } : {}),
    onResult: (message, result) => {
      const attempt = 'attempt' in result ? ` (attempt ${result.attempt})` : '';
      console.log(`${orderId(message)}: ${result.outcome}${attempt}`);
      if ((result.outcome === 'processed' || result.outcome === 'duplicate') && --unsettled === 0)
        allSettled();
    },
  },
);

for (const order of orders) await sqs.sendMessage({ QueueUrl: queueUrl, MessageBody: JSON.stringify(order) });

const timedOut = await Promise.race([settled.then(() => false), setTimeout(30_000, true, { ref: false })]);
await consumer.stop(); // ends the long poll, waits for the runs it started, sends their deletes
for (const QueueUrl of [queueUrl, deadLetterQueueUrl]) await sqs.deleteQueue({ QueueUrl });
sqs.destroy();
if (timedOut) {
  console.error(`timed out: ${unsettled} message(s) not settled`);
  process.exitCode = 1;
}
