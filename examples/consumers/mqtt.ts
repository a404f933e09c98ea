/**
 * onceonly/mqtt on an MQTT 5 broker (Mosquitto): three orders, one of them published twice and one
 * whose work fails on its first attempt. Each result is printed as it comes; once every message is
 * settled the consumer stops, the session it used is ended, and the process exits (exit code 1 if
 * that takes over 30 s).
 *
 * Run it from the repository root: `npx tsx examples/consumers/mqtt.ts` (the broker at MQTT_URL,
 * default mqtt://127.0.0.1:1883). It imports the package by name, as your app would.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout } from 'node:timers/promises';
import mqtt from 'mqtt';
import { memoryStore } from 'onceonly/memory';
import { consumeOnce } from 'onceonly/mqtt';

const url = process.env.MQTT_URL ?? 'mqtt://127.0.0.1:1883';
const id = randomBytes(4).toString('hex');
const topic = `orders/${id}`;
const orders = [{ id: 'order-1' }, { id: 'order-2' }, { id: 'order-3' }, { id: 'order-1' }]; // the last a copy

let unsettled = orders.length;
let allSettled = () => {};
const settled = new Promise<void>((resolve) => {
  allSettled = resolve;
});

const client = mqtt.connect(url, {
  protocolVersion: 5,
  clientId: `shipping-${id}`, // fixed in your app: a restart resumes this session
  clean: false, // a persistent session: it keeps what is not acknowledged
  properties: { sessionExpiryInterval: 3_600, receiveMaximum: 16 }, // 16 messages run at once
});
// In the same tick as mqtt.connect(): the session's held messages arrive right after it connects.
const store = memoryStore(); // one process only; use redisStore / postgresStore when you run several
const consumer = await consumeOnce(
  client,
  topic,
  store,
  async (message, { attempt }) => {
    const order = JSON.parse(message.payload.toString()) as { id: string };
    if (order.id === 'order-2' && attempt === 1) throw new Error('the warehouse did not answer');
    // ship(order): your work, run once per message-id
  },
  {
    retryDelay: '500ms', // in this process; the message stays unacknowledged until then
    onResult: (message, result) => {
      const attempt = 'attempt' in result ? ` (attempt ${result.attempt})` : '';
      console.log(`${message.properties?.userProperties?.['message-id']}: ${result.outcome}${attempt}`);
      if ((result.outcome === 'processed' || result.outcome === 'duplicate') && --unsettled === 0)
        allSettled();
    },
  },
);

for (const order of orders)
  await client.publishAsync(topic, JSON.stringify(order), {
    qos: 1,
    properties: { userProperties: { 'message-id': order.id } }, // the key
  });

const timedOut = await Promise.race([settled.then(() => false), setTimeout(30_000, true, { ref: false })]);
await consumer.stop(); // waits for the runs it started
// An example's session is not needed again: expire it now (your app keeps its session, and ends the
// client only: `await client.endAsync()`).
await client.endAsync(false, { properties: { sessionExpiryInterval: 0 } });
if (timedOut) {
  console.error(`timed out: ${unsettled} message(s) not settled`);
  process.exitCode = 1;
}
