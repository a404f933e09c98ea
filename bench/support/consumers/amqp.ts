/** RabbitMQ (amqplib): a durable queue, drained on a confirm channel with prefetch as the concurrency. */
import amqp from 'amqplib';
import { consumeOnce, RETRY_STEPS_MS } from '../../../src/consumers/amqp.js';
import { servers } from '../../../test/support/servers.js';
import type { BenchKit } from './kit.js';

const connection = await amqp.connect(servers.amqp);
const admin = await connection.createConfirmChannel();

export const kit: BenchKit = {
  name: 'RabbitMQ (amqplib)',
  setup: async (queue) => void (await admin.assertQueue(queue, { durable: true })),
  async fill(queue, n, prefix, body) {
    const content = Buffer.from(body);
    for (let i = 0; i < n; i++) {
      admin.sendToQueue(queue, content, { messageId: `${prefix}-${i}`, persistent: true });
      if (i % 1_000 === 999) await admin.waitForConfirms();
    }
    await admin.waitForConfirms();
  },
  async consume(queue, concurrency, handler, store) {
    const channel = await connection.createConfirmChannel();
    await channel.prefetch(concurrency);
    if (store === undefined) {
      // As a consumer is written by hand: the handler awaited, then the ack.
      const { consumerTag } = await channel.consume(queue, async (m) => {
        if (!m) return;
        await handler(String(m.properties.messageId));
        channel.ack(m);
      });
      return async () => {
        await channel.cancel(consumerTag);
        await channel.close();
      };
    }
    const consumer = await consumeOnce(channel, queue, store, () => handler(''), { logger: false });
    return async () => {
      await consumer.stop();
      await channel.close();
    };
  },
  async teardown(queue) {
    for (const name of [queue, `${queue}.dead`, ...RETRY_STEPS_MS.map((ms) => `${queue}.retry.${ms}`)])
      await admin.deleteQueue(name);
  },
};

export async function close(): Promise<void> {
  await connection.close();
}
