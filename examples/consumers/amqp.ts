/**
 * onceonly/amqp on RabbitMQ: three orders, one of them published twice and one whose work fails on
 * its first attempt. Each result is printed as it comes; once every message is settled the consumer
 * stops, the queues it used are deleted, and the process exits (exit code 1 if that takes over 30 s).
 *
 * Run it from the repository root: `npx tsx examples/consumers/amqp.ts` (RabbitMQ at AMQP_URL,
 * default amqp://guest:guest@127.0.0.1:5672). It imports the package by name, as your app would.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout } from 'node:timers/promises';
import amqp from 'amqplib';
import { consumeOnce } from 'onceonly/amqp';
import { memoryStore } from 'onceonly/memory';

const url = process.env.AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
const queue = `orders-${randomBytes(4).toString('hex')}`;
const orders = [{ id: 'order-1' }, { id: 'order-2' }, { id: 'order-3' }, { id: 'order-1' }]; // the last a copy

let unsettled = orders.length;
let allSettled = () => {};
const settled = new Promise<void>((resolve) => {
  allSettled = resolve;
});

const connection = await amqp.connect(url);
const channel = await connection.createConfirmChannel(); // required: every retry copy confirmed before its ack
await channel.assertQueue(queue, { durable: true });
await channel.prefetch(16);

const store = memoryStore(); // one process only; use redisStore / postgresStore when you run several
const consumer = await consumeOnce(
  channel,
  queue,
  store,
  async (message, { attempt }) => {
    const order = JSON.parse(message.content.toString()) as { id: string };
    if (order.id === 'order-2' && attempt === 1) throw new Error('the warehouse did not answer');
    // ship(order): your work, run once per message id
  },
  {
    retryDelay: '500ms', // through the delay queue `${queue}.retry.500`
    onResult: (message, result) => {
      const attempt = 'attempt' in result ? ` (attempt ${result.attempt})` : '';
      console.log(`${message.properties.messageId}: ${result.outcome}${attempt}`);
      if ((result.outcome === 'processed' || result.outcome === 'duplicate') && --unsettled === 0)
        allSettled();
    },
  },
);

for (const order of orders)
  channel.sendToQueue(queue, Buffer.from(JSON.stringify(order)), { messageId: order.id, persistent: true });
await channel.waitForConfirms();

const timedOut = await Promise.race([settled.then(() => false), setTimeout(30_000, true, { ref: false })]);
await consumer.stop(); // waits for the runs it started
for (const name of [queue, `${queue}.retry.500`]) await channel.deleteQueue(name);
await connection.close();
if (timedOut) {
  console.error(`timed out: ${unsettled} message(s) not settled`);
  process.exitCode = 1;
}
