/**
 * onceonly/nats on NATS JetStream: three orders, one of them published twice and one whose work
 * fails on its first attempt. Each result is printed as it comes; once every message is settled the
 * consumer stops, the stream it used is deleted, and the process exits (exit code 1 if that takes
 * over 30 s).
 *
 * Run it from the repository root: `npx tsx examples/consumers/nats.ts` (NATS with JetStream at
 * NATS_URL, default nats://127.0.0.1:4222). It imports the package by name, as your app would.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout } from 'node:timers/promises';
import { AckPolicy, type JsMsg, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, headers } from '@nats-io/transport-node';
import { memoryStore } from 'onceonly/memory';
import { consumeOnce } from 'onceonly/nats';

const url = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const stream = `ORDERS_${randomBytes(4).toString('hex')}`;
const orders = [{ id: 'order-1' }, { id: 'order-2' }, { id: 'order-3' }, { id: 'order-1' }]; // the last a copy
// The order's own id: a copy published again with the same Nats-Msg-Id is dropped by the stream only
// within its duplicate window (2 min), so key on the id the event carries.
const orderId = (message: JsMsg) => message.json<{ id: string }>().id;

let unsettled = orders.length;
let allSettled = () => {};
const settled = new Promise<void>((resolve) => {
  allSettled = resolve;
});

const nc = await connect({ servers: url });
const jsm = await jetstreamManager(nc);
await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
await jsm.consumers.add(stream, { durable_name: 'ship', ack_policy: AckPolicy.Explicit });
const js = jetstream(nc);

const store = memoryStore(); // one process only; use redisStore / postgresStore when you run several
const consumer = await consumeOnce(
  js,
  await js.consumers.get(stream, 'ship'),
  store,
  async (message, { attempt }) => {
    if (orderId(message) === 'order-2' && attempt === 1) throw new Error('the warehouse did not answer');
    // ship(message.json()): your work, run once per order id
  },
  {
    headers, // the client's, for dead letters
    key: (message) => `orders:${orderId(message)}`,
    retryDelay: '500ms', // nak(500)
    onResult: (message, result) => {
      const attempt = 'attempt' in result ? ` (attempt ${result.attempt})` : '';
      console.log(`${orderId(message)}: ${result.outcome}${attempt}`);
      if ((result.outcome === 'processed' || result.outcome === 'duplicate') && --unsettled === 0)
        allSettled();
    },
  },
);

for (const order of orders) await js.publish(`${stream}.new`, JSON.stringify(order));

const timedOut = await Promise.race([settled.then(() => false), setTimeout(30_000, true, { ref: false })]);
await consumer.stop(); // waits for the runs it started, and sends their acks
await jsm.streams.delete(stream); // its consumer with it
await nc.drain();
if (timedOut) {
  console.error(`timed out: ${unsettled} message(s) not settled`);
  process.exitCode = 1;
}
