/**
 * The chaos kit of MQTT (mqtt.js on Mosquitto): one topic split between the workers by a shared
 * subscription (`$share/<prefix>/<prefix>`), each worker a persistent session of its own slot's
 * clientId, resumed by the worker restarted in that slot; the dead letters on `<prefix>/dead`.
 *
 * Mosquitto (2.0) hands a shared subscription's messages round-robin to every session in the group,
 * connected or not, and keeps a session's unacknowledged messages for that session alone: a killed
 * worker's messages wait for its slot's restart (then resent, flagged dup), never go to the others.
 * So the sessions are made before anything is published (a message no session matches is dropped),
 * one per slot of the default three workers: a run with fewer would strand the spare sessions' share.
 */
import mqtt from 'mqtt';
import { consumeOnce, type MqttMessage } from '../../../../src/consumers/mqtt.js';
import { servers } from '../../../support/servers.js';
import { type ChaosKit, IN_FLIGHT } from '../chaos.js';

const SLOTS = 3;
const v5 = { protocolVersion: 5 as const };
const session = (clientId: string): mqtt.IClientOptions => ({
  ...v5,
  clientId,
  clean: false,
  properties: { sessionExpiryInterval: 600, receiveMaximum: IN_FLIGHT },
});
const slotId = (prefix: string, slot: number) => `${prefix}-w${slot}`;
const shared = (prefix: string) => `$share/${prefix}/${prefix}`;
const idOf = (message: MqttMessage) => String(message.properties?.userProperties?.['message-id']);

/** The dead letters, read by a subscriber that lives from setup to teardown (in the test's process). */
const collectors = new Map<string, { client: mqtt.MqttClient; ids: string[] }>();

export const kit: ChaosKit = {
  name: 'mqtt',
  async setup(prefix) {
    for (let slot = 0; slot < SLOTS; slot++) {
      const c = await mqtt.connectAsync(servers.mqtt, session(slotId(prefix, slot)));
      await c.subscribeAsync(shared(prefix), { qos: 1 });
      await c.endAsync();
    }
    const client = await mqtt.connectAsync(servers.mqtt, session(`${prefix}-dead`));
    const ids: string[] = [];
    client.on('message', (_topic, _payload, packet) => ids.push(idOf(packet)));
    await client.subscribeAsync(`${prefix}/dead`, { qos: 1 });
    collectors.set(prefix, { client, ids });
  },
  async publish(prefix, ids) {
    const c = await mqtt.connectAsync(servers.mqtt, v5);
    await Promise.all(
      ids.map((id) =>
        c.publishAsync(prefix, JSON.stringify({ id }), {
          qos: 1,
          properties: { userProperties: { 'message-id': id } },
        }),
      ),
    );
    await c.endAsync();
  },
  deadLettered: async (prefix) => [...(collectors.get(prefix)?.ids ?? [])],
  async teardown(prefix) {
    await collectors.get(prefix)?.client.endAsync();
    collectors.delete(prefix);
    // A clean start with no session expiry ends each session and drops what it holds.
    for (const clientId of [
      ...Array.from({ length: SLOTS }, (_, slot) => slotId(prefix, slot)),
      `${prefix}-dead`,
    ]) {
      const c = await mqtt.connectAsync(servers.mqtt, { ...v5, clientId, clean: true });
      await c.endAsync();
    }
  },
  async consume(prefix, store, work, { confirmed, slot, ...options }) {
    const client = mqtt.connect(servers.mqtt, session(slotId(prefix, slot)));
    const consumer = await consumeOnce(
      client,
      shared(prefix),
      store,
      (message, ctx) => work(idOf(message), ctx),
      {
        ...options,
        onResult: (message, result) => {
          if (result.outcome === 'processed') confirmed(idOf(message), result.attempt);
        },
      },
    );
    return async () => {
      await consumer.stop();
      await client.endAsync().catch(() => {});
    };
  },
};
