/**
 * SQS on ElasticMQ 0.7.1 (the stand-in of test/support/elasticmq.ts, started here): a queue per
 * round, drained by long polls with `concurrency` messages running at once: by hand the loop an
 * application writes (receivers each taking up to 10, the handlers awaited, then one
 * DeleteMessageBatch for what they received), or `consumeOnce`. The round trips are to a local JVM:
 * the ratio, not the figure, is what carries over to SQS.
 */
import type { SQS } from '@aws-sdk/client-sqs';
import { consumeOnce } from '../../../src/consumers/sqs.js';
import { startElasticMq } from '../../../test/support/elasticmq.js';
import type { BenchKit } from './kit.js';

const server = await startElasticMq();
const sqs: SQS = server.client();
const name = (queue: string) => queue.replace(/[^\w-]/g, '_').slice(0, 80);
const urls = new Map<string, string>();
const url = (queue: string) => urls.get(queue) ?? '';

export const kit: BenchKit = {
  name: 'SQS (ElasticMQ 0.7.1, @aws-sdk/client-sqs 3.410)',
  memoryOnly: true,
  async setup(queue) {
    for (const q of [queue, `${queue}_dead`]) {
      const { QueueUrl } = await sqs.createQueue({ QueueName: name(q) });
      urls.set(q, QueueUrl ?? '');
    }
  },
  async fill(queue, n, _prefix, body) {
    const MessageBody = Buffer.from(body).toString('base64');
    const batches = Array.from({ length: Math.ceil(n / 10) }, (_, b) =>
      Array.from({ length: Math.min(10, n - b * 10) }, (_, j) => ({
        Id: String(j),
        MessageBody,
      })),
    );
    for (let i = 0; i < batches.length; i += 50)
      await Promise.all(
        batches.slice(i, i + 50).map((Entries) => sqs.sendMessageBatch({ QueueUrl: url(queue), Entries })),
      );
  },
  async consume(queue, concurrency, handler, store) {
    const QueueUrl = url(queue);
    if (store === undefined) {
      // As a consumer is written by hand: receivers of up to 10 each (as many as the concurrency
      // needs), the handlers of a receive awaited, then its messages deleted in one call.
      let stopping = false;
      const aborts = new Set<AbortController>();
      const receiver = async (most: number) => {
        while (!stopping) {
          const abort = new AbortController();
          aborts.add(abort);
          try {
            const { Messages = [] } = await sqs.receiveMessage(
              { QueueUrl, MaxNumberOfMessages: most, WaitTimeSeconds: 20 },
              { abortSignal: abort.signal },
            );
            await Promise.all(Messages.map((m) => handler(String(m.MessageId))));
            if (Messages.length > 0)
              await sqs.deleteMessageBatch({
                QueueUrl,
                Entries: Messages.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle })),
              });
          } catch {
            if (!stopping) await new Promise((resolve) => setTimeout(resolve, 100));
          } finally {
            aborts.delete(abort);
          }
        }
      };
      const loops = Array.from({ length: Math.ceil(concurrency / 10) }, (_, i) =>
        receiver(Math.min(10, concurrency - i * 10)),
      );
      return async () => {
        stopping = true;
        for (const abort of aborts) abort.abort();
        await Promise.all(loops);
      };
    }
    const running = await consumeOnce(sqs, QueueUrl, store, () => handler(''), {
      logger: false,
      concurrency,
      deadLetterQueueUrl: url(`${queue}_dead`),
    });
    return () => running.stop();
  },
  async teardown(queue) {
    for (const q of [queue, `${queue}_dead`]) await sqs.deleteQueue({ QueueUrl: url(q) }).catch(() => {});
  },
};

export async function close(): Promise<void> {
  sqs.destroy();
  await server.stop();
}
