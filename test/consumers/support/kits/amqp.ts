/** The chaos kit of RabbitMQ (amqplib): a durable queue, `consumeOnce` on a confirm channel, `<queue>.dead`. */
import amqp from 'amqplib';
import { consumeOnce, RETRY_STEPS_MS } from '../../../../src/consumers/amqp.js';
import { servers } from '../../../support/servers.js';
import { type ChaosKit, IN_FLIGHT } from '../chaos.js';

async function withChannel<T>(fn: (channel: amqp.ConfirmChannel) => Promise<T>): Promise<T> {
  const connection = await amqp.connect(servers.amqp);
  try {
    const channel = await connection.createConfirmChannel();
    return await fn(channel);
  } finally {
    await connection.close();
  }
}

export const kit: ChaosKit = {
  name: 'amqp',
  setup: (queue) =>
    withChannel(async (channel) => void (await channel.assertQueue(queue, { durable: true }))),
  publish: (queue, ids) =>
    withChannel(async (channel) => {
      for (const id of ids)
        channel.sendToQueue(queue, Buffer.from(JSON.stringify({ id })), { messageId: id, persistent: true });
      await channel.waitForConfirms();
    }),
  deadLettered: (queue) =>
    withChannel(async (channel) => {
      // Read without consuming: every message is fetched and put back.
      const ids: string[] = [];
      await channel.assertQueue(`${queue}.dead`, { durable: true });
      const held: amqp.GetMessage[] = [];
      for (let m = await channel.get(`${queue}.dead`); m; m = await channel.get(`${queue}.dead`)) {
        held.push(m);
        ids.push(String(m.properties.messageId));
      }
      channel.nackAll(true);
      return ids;
    }),
  teardown: (queue) =>
    withChannel(async (channel) => {
      for (const name of [queue, `${queue}.dead`, ...RETRY_STEPS_MS.map((ms) => `${queue}.retry.${ms}`)])
        await channel.deleteQueue(name);
    }),
  async consume(queue, store, work, { confirmed, ...options }) {
    const connection = await amqp.connect(servers.amqp);
    const channel = await connection.createConfirmChannel();
    await channel.prefetch(IN_FLIGHT);
    const consumer = await consumeOnce(
      channel,
      queue,
      store,
      (message, ctx) => work(String(message.properties.messageId), ctx),
      {
        ...options,
        onResult: (message, result) => {
          if (result.outcome === 'processed') confirmed(String(message.properties.messageId), result.attempt);
        },
      },
    );
    return async () => {
      await consumer.stop();
      await connection.close().catch(() => {});
    };
  },
};
