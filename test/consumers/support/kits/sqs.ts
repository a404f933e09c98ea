/**
 * The chaos kit of SQS, on ElasticMQ 0.7.1 (the stand-in of test/support/elasticmq.ts, started by
 * sqs-chaos.test.ts, which hands its endpoint to the workers in ONCEONLY_SQS_ENDPOINT): a queue and
 * `<queue>_dead`, `consumeOnce` keyed on the id in the body (a copy published again is another SQS
 * message, with another MessageId), a visibility of 2 s so a killed process's messages come back
 * soon. The dead letters are read by receiving and deleting them, kept here across reads.
 */
import { consumeOnce } from '../../../../src/consumers/sqs.js';
import { elasticClient } from '../../../support/elasticmq.js';
import { type ChaosKit, IN_FLIGHT } from '../chaos.js';

const endpoint = () => {
  const url = process.env.ONCEONLY_SQS_ENDPOINT;
  if (!url) throw new Error('the SQS chaos kit needs ONCEONLY_SQS_ENDPOINT (an ElasticMQ)');
  return url;
};
const queueUrl = (name: string) => `${endpoint()}/queue/${name}`;
const idOf = (body: string | undefined) => (JSON.parse(body ?? '{}') as { id: string }).id;

/** The dead letters read so far, by queue (reading deletes them from the dead-letter queue). */
const dead = new Map<string, string[]>();

async function withClient<T>(fn: (sqs: ReturnType<typeof elasticClient>) => Promise<T>): Promise<T> {
  const sqs = elasticClient(endpoint());
  try {
    return await fn(sqs);
  } finally {
    sqs.destroy();
  }
}

export const kit: ChaosKit = {
  name: 'sqs',
  setup: (queue) =>
    withClient(async (sqs) => {
      for (const QueueName of [queue, `${queue}_dead`])
        await sqs.createQueue({ QueueName, Attributes: { VisibilityTimeout: '2' } });
    }),
  publish: (queue, ids) =>
    withClient(async (sqs) => {
      const batches: string[][] = [];
      for (let i = 0; i < ids.length; i += 10) batches.push(ids.slice(i, i + 10));
      await Promise.all(
        batches.map((batch) =>
          sqs.sendMessageBatch({
            QueueUrl: queueUrl(queue),
            Entries: batch.map((id, j) => ({ Id: String(j), MessageBody: JSON.stringify({ id }) })),
          }),
        ),
      );
    }),
  deadLettered: (queue) =>
    withClient(async (sqs) => {
      const ids = dead.get(queue) ?? [];
      dead.set(queue, ids);
      const QueueUrl = queueUrl(`${queue}_dead`);
      for (;;) {
        const { Messages = [] } = await sqs.receiveMessage({ QueueUrl, MaxNumberOfMessages: 10 });
        if (Messages.length === 0) return [...ids];
        for (const m of Messages) {
          await sqs.deleteMessage({ QueueUrl, ReceiptHandle: m.ReceiptHandle });
          ids.push(idOf(m.Body));
        }
      }
    }),
  teardown: (queue) =>
    withClient(async (sqs) => {
      for (const name of [queue, `${queue}_dead`])
        await sqs.deleteQueue({ QueueUrl: queueUrl(name) }).catch(() => {});
    }),
  async consume(queue, store, work, { confirmed, slot: _, ...options }) {
    const sqs = elasticClient(endpoint());
    const consumer = await consumeOnce(sqs, queueUrl(queue), store, (m, ctx) => work(idOf(m.Body), ctx), {
      ...options,
      deadLetterQueueUrl: queueUrl(`${queue}_dead`),
      key: (m) => `chaos:${queue}:${idOf(m.Body)}`,
      concurrency: IN_FLIGHT,
      visibilityTimeout: '2s',
      // ElasticMQ 0.7 ends a long poll early only for a message sent, not for one visible again:
      // longer polls would gather the deferrals SQS spreads over seconds back into one batch.
      waitTimeSeconds: 1,
      onResult: (m, result) => {
        if (result.outcome === 'processed') confirmed(idOf(m.Body), result.attempt);
      },
    });
    return async () => {
      await consumer.stop();
      sqs.destroy();
    };
  },
};
