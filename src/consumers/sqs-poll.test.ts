/**
 * onceonly/sqs's long-poll consumer on ElasticMQ 0.7.1 (the SQS stand-in, see
 * test/support/elasticmq.ts): deleted once processed, a copy deleted without a second run, a
 * failure made visible again after its delay and run as the next attempt, the last failure copied
 * to the dead-letter queue with its reason before its delete, a message without a key dead-lettered
 * unrun, a long run kept invisible from a competing consumer by its heartbeat, stop() ending a long
 * poll at once and handing back what it did not start, a refused delete or dead-letter send losing
 * nothing. ElasticMQ has no FIFO queues: the FIFO rules run on a standard queue whose URL the test
 * client gives a `.fifo` suffix the server never sees, so group blocking and deduplication by SQS
 * itself are not shown here.
 */
import { strict as assert } from 'node:assert';
import { after, describe, it } from 'node:test';
import type { SQS } from '@aws-sdk/client-sqs';
import { type ElasticMq, elasticMqForSuite } from '../../test/support/elasticmq.js';
import { ConfigError } from '../errors.js';
import type { Store } from '../once.js';
import { memoryStore } from '../stores/memory.js';
import type { ConsumerResult } from './settle.js';
import { consumeOnce, DEAD_LETTER_ATTRIBUTES, type SqsConsumerOptions, type SqsMessage } from './sqs.js';

const quiet = { logger: false as const };
const server: ElasticMq | undefined = await elasticMqForSuite();

if (server) {
  describe('onceonly/sqs consumeOnce on ElasticMQ', () => {
    const sqs = server.client();
    after(async () => {
      sqs.destroy();
      await server.stop();
    });

    const queues = async (visibility = 30) => ({
      url: await server.queue('oo_sqs', visibility),
      dead: await server.queue('oo_sqs_dead'),
    });
    const send = (url: string, body: string) => sqs.sendMessage({ QueueUrl: url, MessageBody: body });
    const waitFor = async (what: string, ok: () => boolean | Promise<boolean>, ms = 15_000) => {
      const end = Date.now() + ms;
      while (!(await ok())) {
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    /**
     * The bodies still in a queue of 1 s visibility, received once what was in flight is visible
     * again (ElasticMQ 0.7.1's ApproximateNumberOfMessages counts deleted messages: not used).
     */
    const remaining = async (url: string) => {
      await new Promise((resolve) => setTimeout(resolve, 1_300));
      const { Messages = [] } = await sqs.receiveMessage({ QueueUrl: url, MaxNumberOfMessages: 10 });
      return Messages.map((m) => m.Body ?? '').sort();
    };
    /** The bodies in a queue (received and deleted). */
    const drain = async (url: string) => {
      const bodies: string[] = [];
      for (;;) {
        const { Messages = [] } = await sqs.receiveMessage({ QueueUrl: url, MaxNumberOfMessages: 10 });
        if (Messages.length === 0) return bodies.sort();
        for (const m of Messages) {
          bodies.push(m.Body ?? '');
          await sqs.deleteMessage({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle });
        }
      }
    };
    const consumer = (
      client: SQS,
      url: string,
      work: (m: SqsMessage, attempt: number) => unknown,
      options: Partial<SqsConsumerOptions> & { store?: Store },
    ) => {
      const { store = memoryStore(), ...rest } = options;
      return consumeOnce(client, url, store, (m, { attempt }) => work(m, attempt), {
        ...quiet,
        deadLetterQueueUrl: '',
        retryDelay: '1s',
        visibilityTimeout: '1s',
        concurrency: 4,
        waitTimeSeconds: 1,
        ...rest,
      });
    };

    it('deletes a processed message, and a copy of it without running it again', async () => {
      const { url, dead } = await queues(1);
      const ran: string[] = [];
      const results: string[] = [];
      const c = await consumer(sqs, url, (m) => void ran.push(m.Body ?? ''), {
        deadLetterQueueUrl: dead,
        key: (m) => `order:${url}:${m.Body}`,
        concurrency: 1, // one at a time: the copy is a duplicate, never in flight beside its original
        onResult: (_m, r) => void results.push(r.outcome),
      });
      for (const body of ['one', 'two', 'one']) await send(url, body);
      await waitFor('three results', () => results.length >= 3);
      await c.stop();
      assert.deepEqual(await remaining(url), [], 'every message deleted');
      assert.deepEqual(ran.sort(), ['one', 'two']);
      assert.deepEqual(results.sort(), ['duplicate', 'processed', 'processed']);
    });

    it('makes a failure visible again after its delay: the same message, run as the next attempt', async () => {
      const { url, dead } = await queues(1);
      const attempts: Array<{ attempt: number; at: number; received: string | undefined; id: string }> = [];
      const c = await consumer(
        sqs,
        url,
        (m, attempt) => {
          attempts.push({
            attempt,
            at: Date.now(),
            received: m.Attributes?.ApproximateReceiveCount,
            id: m.MessageId ?? '',
          });
          if (attempt < 2) throw new Error('not yet');
        },
        { deadLetterQueueUrl: dead },
      );
      await send(url, 'retry me');
      await waitFor('the second attempt', () => attempts.length >= 2);
      await c.stop();
      assert.deepEqual(await remaining(url), [], 'deleted');
      assert.deepEqual(
        attempts.map((a) => [a.attempt, a.received]),
        [
          [1, '1'],
          [2, '2'],
        ],
      );
      assert.equal(attempts[0]!.id, attempts[1]!.id, 'the same message, not a copy');
      // Visible no sooner than its delay (1 s): a lower bound, never flaky.
      assert.ok(attempts[1]!.at - attempts[0]!.at >= 900, 'the retry waited its delay');
    });

    it('dead-letters the last failure with its reason, then deletes it; a message without a key unrun', async () => {
      const { url, dead } = await queues(1);
      const sent: Array<Parameters<SQS['sendMessage']>[0]> = [];
      // The real client, its dead-letter sends noted on their way.
      const noting = Object.assign(Object.create(sqs) as SQS, {
        sendMessage: (input: Parameters<SQS['sendMessage']>[0]) => {
          sent.push(input);
          return sqs.sendMessage(input);
        },
      });
      let runs = 0;
      const results: ConsumerResult['outcome'][] = [];
      const c = await consumer(
        noting,
        url,
        () => {
          runs++;
          throw new Error('downstream <refused>');
        },
        {
          deadLetterQueueUrl: dead,
          maxAttempts: 2,
          key: (m) => {
            if (!m.Body?.startsWith('order ')) throw new Error('not an order');
            return `${url}:${m.Body}`;
          },
          onResult: (_m, r) => void results.push(r.outcome),
        },
      );
      const poison = await send(url, 'order 1');
      await send(url, 'anonymous');
      await waitFor('both dead-lettered', () => sent.length >= 2);
      await c.stop();
      assert.deepEqual(await remaining(url), [], 'both deleted once copied');
      assert.equal(runs, 2, 'the poison message ran twice, the anonymous one never');
      assert.deepEqual(results.sort(), ['failed', 'failed', 'invalid']);
      assert.deepEqual(await drain(dead), ['anonymous', 'order 1']);
      const copy = sent.find((s) => s.MessageBody === 'order 1');
      const attribute = (name: string) => copy?.MessageAttributes?.[name]?.StringValue;
      assert.equal(copy?.QueueUrl, dead);
      assert.match(
        attribute(DEAD_LETTER_ATTRIBUTES.reason) ?? '',
        /failed on attempt 2 of 2: Error: downstream <refused>/,
      );
      assert.equal(attribute(DEAD_LETTER_ATTRIBUTES.messageId), poison.MessageId);
      assert.equal(attribute(DEAD_LETTER_ATTRIBUTES.queueUrl), url);
      const anonymous = sent.find((s) => s.MessageBody === 'anonymous');
      assert.match(
        anonymous?.MessageAttributes?.[DEAD_LETTER_ATTRIBUTES.reason]?.StringValue ?? '',
        /no key: .*not an order/,
      );
    });

    it('keeps a run longer than its visibility timeout from a competing consumer (heartbeat)', async () => {
      const { url, dead } = await queues(1);
      const results: string[] = [];
      let competitorRuns = 0;
      let started = false;
      const long = () => {
        started = true;
        return new Promise((resolve) => setTimeout(resolve, 3_500));
      };
      const c = await consumer(sqs, url, long, {
        deadLetterQueueUrl: dead,
        visibilityTimeout: '1s',
        onResult: (_m, r) => void results.push(r.outcome),
      });
      await send(url, 'long');
      await waitFor('the run to start', () => started);
      // Another consumer on a store of its own: had it received the message, it would run it.
      const competitor = await consumer(sqs, url, () => void competitorRuns++, {
        deadLetterQueueUrl: dead,
        visibilityTimeout: '1s',
      });
      await waitFor('the run', () => results.length >= 1, 10_000);
      await competitor.stop();
      await c.stop();
      assert.deepEqual(await remaining(url), [], 'deleted');
      assert.deepEqual(results, ['processed']);
      assert.equal(competitorRuns, 0, 'never visible to the competing consumer while it ran');
    });

    it('stop() ends a pending long poll at once, and waits for the runs it started', async () => {
      const { url, dead } = await queues(1);
      let finished = 0;
      let started = false;
      const c = await consumer(
        sqs,
        url,
        async () => {
          started = true;
          await new Promise((resolve) => setTimeout(resolve, 300));
          finished++;
        },
        { deadLetterQueueUrl: dead, waitTimeSeconds: 20 },
      );
      await send(url, 'slow');
      await waitFor('the run to start', () => started);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const stopping = Date.now();
      await c.stop();
      assert.ok(Date.now() - stopping < 3_000, 'the 20 s long polls were aborted');
      assert.equal(finished, 1);
      assert.deepEqual(await remaining(url), [], 'its delete sent before stop() resolved');
      assert.equal(await c.closed, undefined);
    });

    it('loses nothing when SQS refuses a delete: the message comes back, a duplicate, deleted then', async () => {
      const { url, dead } = await queues(1);
      let refused = 0;
      const refusing = Object.assign(Object.create(sqs) as SQS, {
        deleteMessageBatch: (input: Parameters<SQS['deleteMessageBatch']>[0]) => {
          if (refused++ === 0) return Promise.reject(new Error('connection reset (injected)'));
          return sqs.deleteMessageBatch(input);
        },
      });
      let runs = 0;
      const results: string[] = [];
      const c = await consumer(refusing, url, () => void runs++, {
        deadLetterQueueUrl: dead,
        visibilityTimeout: '1s',
        onResult: (_m, r) => void results.push(r.outcome),
      });
      await send(url, 'keep me');
      await waitFor('the redelivery', () => results.length >= 2);
      await c.stop();
      assert.deepEqual(await remaining(url), [], 'deleted the second time');
      assert.ok(refused >= 2, 'the first delete was refused');
      assert.equal(runs, 1);
      assert.deepEqual(results, ['processed', 'duplicate']);
    });

    it('never deletes a poison message whose dead-letter copy SQS refuses', async () => {
      const { url, dead } = await queues(1);
      const gone = await server.queue('oo_sqs_gone');
      await sqs.deleteQueue({ QueueUrl: gone });
      let runs = 0;
      const failing = () => {
        runs++;
        throw new Error('always');
      };
      const c = await consumer(sqs, url, failing, { deadLetterQueueUrl: gone, maxAttempts: 1 });
      await send(url, 'poison');
      await waitFor('two refused dead letters', () => runs >= 2);
      await c.stop();
      assert.deepEqual(await remaining(url), ['poison'], 'still in its queue');
      // With a dead-letter queue that takes it: copied, then deleted.
      const store = memoryStore();
      let dead_ = 0;
      const fixed = await consumer(sqs, url, failing, {
        deadLetterQueueUrl: dead,
        maxAttempts: 1,
        store,
        onResult: () => void dead_++,
      });
      await waitFor('its last failure', () => dead_ >= 1);
      await fixed.stop();
      assert.deepEqual(await drain(dead), ['poison']);
      assert.deepEqual(await remaining(url), [], 'deleted once copied');
    });

    /**
     * ElasticMQ 0.7.1 has no FIFO queues: the consumer is given `<url>.fifo`, and this client strips
     * the suffix before a request leaves. No MessageGroupId comes back: every message is one group.
     * The messages each receive returned are noted, in the order it returned them.
     */
    const asFifo = (received: string[][]) => {
      const client = server.client();
      client.middlewareStack.add(
        (next) => async (args) => {
          const request = args.request as { path?: string };
          if (request.path?.endsWith('.fifo')) request.path = request.path.slice(0, -'.fifo'.length);
          const out = await next(args);
          const messages = (out.output as { Messages?: SqsMessage[] }).Messages;
          if (messages?.length) received.push(messages.map((m) => m.Body ?? ''));
          return out;
        },
        { step: 'build', name: 'unfifo', priority: 'low' },
      );
      return client;
    };

    it('runs a FIFO group one message at a time in the order received; a retry hands the rest back unrun', async () => {
      const received: string[][] = [];
      const client = asFifo(received);
      const { url, dead } = await queues(1);
      for (const body of ['a', 'b', 'c', 'd', 'e']) await send(url, body);
      const runs: string[] = [];
      let running = 0;
      let most = 0;
      const c = await consumer(
        client,
        `${url}.fifo`,
        async (m, attempt) => {
          most = Math.max(most, ++running);
          runs.push(`${m.Body}@${m.Attributes?.ApproximateReceiveCount}`);
          await new Promise((resolve) => setTimeout(resolve, 20));
          running--;
          if (m.Body === 'b' && attempt === 1) throw new Error('b fails once');
        },
        { deadLetterQueueUrl: `${dead}.fifo`, concurrency: 10 },
      );
      await waitFor('all five run', () => new Set(runs.map((r) => r.split('@')[0])).size === 5);
      await waitFor('b run again', () => runs.some((r) => r.startsWith('b@') && r !== 'b@1'));
      await c.stop();
      client.destroy();
      assert.equal(most, 1, 'one at a time');
      // The first receive's messages run in its order up to b's failure; those after b are handed
      // back unrun, and run on a later receive (their receive count 2).
      const batch = received[0]!;
      const i = batch.indexOf('b');
      assert.ok(i >= 0, `b in the first receive: ${JSON.stringify(received)}`);
      const firstRuns = runs.slice(0, i + 1);
      assert.deepEqual(
        firstRuns,
        batch.slice(0, i + 1).map((x) => `${x}@1`),
        JSON.stringify({ received, runs }),
      );
      for (const x of batch.slice(i + 1))
        assert.ok(!runs.includes(`${x}@1`) && runs.includes(`${x}@2`), `${x} handed back: ${runs}`);
      assert.deepEqual(await remaining(url), [], 'all deleted');
    });

    it('stop() hands back at once the FIFO messages waiting behind a run', async () => {
      const received: string[][] = [];
      const client = asFifo(received);
      const { url, dead } = await queues(30); // not handed back, they would stay invisible 30 s
      const ran: string[] = [];
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      for (const body of ['a', 'b', 'c']) await send(url, body);
      const c = await consumer(
        client,
        `${url}.fifo`,
        (m) => {
          ran.push(m.Body ?? '');
          return held;
        },
        { deadLetterQueueUrl: `${dead}.fifo`, concurrency: 3, visibilityTimeout: '30s' },
      );
      await waitFor('three received, one running', () => received.flat().length === 3 && ran.length === 1);
      const stopped = c.stop();
      release();
      await stopped;
      client.destroy();
      assert.equal(ran.length, 1, 'the two waiting never ran');
      const next: string[] = [];
      const after = await consumer(sqs, url, (m) => void next.push(m.Body ?? ''), {
        deadLetterQueueUrl: dead,
      });
      await waitFor('the two handed back, run at once by the next consumer', () => next.length === 2, 5_000);
      await after.stop();
      assert.deepEqual([...ran, ...next].sort(), ['a', 'b', 'c']);
    });

    it('refuses options that would drop or loop messages; ends on a queue that does not exist', async () => {
      const store = memoryStore();
      const { url, dead } = await queues(1);
      const refused = (options: Partial<SqsConsumerOptions>, pattern: RegExp, queue = url) =>
        assert.rejects(
          consumeOnce(sqs, queue, store, () => {}, { ...quiet, deadLetterQueueUrl: dead, ...options }),
          (e: unknown) => e instanceof ConfigError && pattern.test(e.message),
        );
      await refused({ deadLetterQueueUrl: '' }, /deadLetterQueueUrl/);
      await refused({ deadLetterQueueUrl: url }, /not be the queue itself/);
      await refused({}, /must be a FIFO queue/, `${url}.fifo`);
      await refused({ concurrency: 0 }, /concurrency/);
      await refused({ waitTimeSeconds: 21 }, /waitTimeSeconds/);
      await refused({ visibilityTimeout: '13h' }, /visibilityTimeout/);
      const missing = await consumeOnce(sqs, `${url}_missing`, store, () => {}, {
        ...quiet,
        deadLetterQueueUrl: dead,
        waitTimeSeconds: 0,
      });
      const end = await missing.closed;
      assert.match(end?.name ?? '', /NonExistentQueue/);
      await missing.stop();
    });
  });
}
