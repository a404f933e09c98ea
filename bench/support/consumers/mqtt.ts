/**
 * MQTT (mqtt.js on Mosquitto, QoS 1): a topic split by a shared subscription between 16 persistent
 * sessions, filled ahead while they are offline, then drained by 16 connections of
 * concurrency / 16 messages each (MQTT 5 receiveMaximum). Mosquitto keeps at most 1,000 queued
 * messages per session by default (`max_queued_messages`; more are dropped), hence the sessions:
 * 10,000 messages are 625 each. By hand is mqtt.js's own hook: `handleMessage` awaits the handler,
 * then mqtt.js sends the PUBACK (it reads nothing more from that connection until then).
 */
import { randomBytes } from 'node:crypto';
import mqtt from 'mqtt';
import { consumeOnce } from '../../../src/consumers/mqtt.js';
import { servers } from '../../../test/support/servers.js';
import type { BenchKit } from './kit.js';

const SESSIONS = 16;
const publisher = await mqtt.connectAsync(servers.mqtt, { protocolVersion: 5 });
// Topics and client ids of one bench run: the queue names are long.
const short = new Map<string, string>();
const topicOf = (queue: string) => {
  const topic = short.get(queue) ?? `oo-bench-${randomBytes(4).toString('hex')}`;
  short.set(queue, topic);
  return topic;
};
const session = (topic: string, i: number, receiveMaximum = 8): mqtt.IClientOptions => ({
  protocolVersion: 5,
  clientId: `${topic}-s${i}`,
  clean: false,
  properties: { sessionExpiryInterval: 600, receiveMaximum },
});
const SLOTS = Array.from({ length: SESSIONS }, (_, i) => i);

export const kit: BenchKit = {
  name: `MQTT (mqtt.js on Mosquitto, ${SESSIONS} sessions of a shared subscription)`,
  async setup(queue) {
    const topic = topicOf(queue);
    for (const i of SLOTS) {
      const c = await mqtt.connectAsync(servers.mqtt, session(topic, i));
      await c.subscribeAsync(`$share/${topic}/${topic}`, { qos: 1 });
      await c.endAsync();
    }
  },
  async fill(queue, n, prefix, body) {
    const topic = topicOf(queue);
    const payload = Buffer.from(body);
    for (let from = 0; from < n; from += 1_000) {
      const sends: Promise<unknown>[] = [];
      for (let i = from; i < Math.min(n, from + 1_000); i++)
        sends.push(
          publisher.publishAsync(topic, payload, {
            qos: 1,
            properties: { userProperties: { 'message-id': `${prefix}-${i}` } },
          }),
        );
      await Promise.all(sends);
    }
  },
  async consume(queue, concurrency, handler, store) {
    const topic = topicOf(queue);
    const each = Math.max(1, Math.ceil(concurrency / SESSIONS));
    const clients = SLOTS.map((i) => mqtt.connect(servers.mqtt, session(topic, i, each)));
    if (store === undefined) {
      // As a consumer is written by hand with mqtt.js: the handler awaited, then mqtt.js's PUBACK.
      for (const client of clients)
        client.handleMessage = async (packet, callback) => {
          const id = packet.cmd === 'publish' ? packet.properties?.userProperties?.['message-id'] : undefined;
          await handler(String(id));
          callback();
        };
      return async () => {
        await Promise.all(clients.map((c) => c.endAsync()));
      };
    }
    const consumers = await Promise.all(
      clients.map((client) =>
        consumeOnce(client, `$share/${topic}/${topic}`, store, () => handler(''), { logger: false }),
      ),
    );
    return async () => {
      await Promise.all(consumers.map((c) => c.stop()));
      await Promise.all(clients.map((c) => c.endAsync()));
    };
  },
  async teardown(queue) {
    const topic = topicOf(queue);
    for (const i of SLOTS) {
      const c = await mqtt.connectAsync(servers.mqtt, {
        protocolVersion: 5,
        clientId: `${topic}-s${i}`,
        clean: true,
      });
      await c.endAsync();
    }
    short.delete(queue);
  },
};

export async function close(): Promise<void> {
  await publisher.endAsync();
}
