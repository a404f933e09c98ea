import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { Store } from '../core/types.js';
import { memoryStore } from '../stores/memory.js';
import { type SqsRecord, type SqsRecordResult, sqsBatch } from './sqs.js';

const QUEUE = 'arn:aws:sqs:us-east-2:123456789012:my-queue';

/** A record as in the Lambda guide's sample SQS event. */
function record(messageId: string, body: string, queue = QUEUE): SqsRecord {
  return {
    messageId,
    receiptHandle: `MessageReceiptHandle-${messageId}`,
    body,
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: '1523232000000',
      SenderId: '123456789012',
      ApproximateFirstReceiveTimestamp: '1523232000001',
    },
    messageAttributes: {},
    md5OfBody: '7b270e59b47ff90a553787216d55d91d',
    eventSourceARN: queue,
  };
}

function contextWith(ms: number) {
  const end = Date.now() + ms;
  return { callbackWaitsForEmptyEventLoop: true, getRemainingTimeInMillis: () => end - Date.now() };
}

const failures = (ids: string[]) => ({
  batchItemFailures: ids.map((itemIdentifier) => ({ itemIdentifier })),
});

describe('sqsBatch: once() per record, partial batch failures', () => {
  it('reports only the records that failed; a redelivered batch runs only those again', async () => {
    const store = memoryStore();
    const ran: string[] = [];
    let broken = true;
    const handler = sqsBatch(
      store,
      (r) => {
        ran.push(r.messageId);
        if (r.body === 'boom' && broken) throw new Error('downstream down');
      },
      { logger: false },
    );
    const event = { Records: [record('m1', 'ok'), record('m2', 'boom'), record('m3', 'ok')] };
    const context = contextWith(30_000);
    assert.deepEqual(await handler(event, context), failures(['m2']));
    assert.equal(context.callbackWaitsForEmptyEventLoop, false);
    broken = false;
    assert.deepEqual(await handler(event, contextWith(30_000)), failures([]));
    assert.deepEqual(ran.sort(), ['m1', 'm2', 'm2', 'm3'], 'm1 and m3 are duplicates the second time');
  });

  it('a record another invocation is running (in-flight) is reported, and runs after it is done', async () => {
    const store = memoryStore();
    let release!: () => void;
    const slow = new Promise<void>((resolve) => {
      release = resolve;
    });
    const handler = sqsBatch(store, (r) => (r.body === 'slow' ? slow : undefined), { logger: false });
    const first = handler({ Records: [record('m1', 'slow')] });
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(await handler({ Records: [record('m1', 'slow')] }), failures(['m1']));
    release();
    assert.deepEqual(await first, failures([]));
  });

  it('FIFO: records run in order and the first failure stops the batch, the rest reported unrun', async () => {
    const ran: string[] = [];
    const fifo = 'arn:aws:sqs:us-east-2:123456789012:orders.fifo';
    const handler = sqsBatch(
      memoryStore(),
      (r) => {
        ran.push(r.messageId);
        if (r.body === 'boom') throw new Error('no');
      },
      { logger: false },
    );
    const result = await handler({
      Records: [record('a', 'ok', fifo), record('b', 'boom', fifo), record('c', 'ok', fifo)],
    });
    assert.deepEqual(result, failures(['b', 'c']));
    assert.deepEqual(ran, ['a', 'b']);
  });

  it("the deadline is cut to the invocation's remaining time: a record that hangs is released and reported in time", async () => {
    const store = memoryStore();
    const seen: SqsRecordResult[] = [];
    let hang = true;
    const handler = sqsBatch(store, () => (hang ? new Promise(() => {}) : 'done'), {
      timeout: '30s',
      logger: false,
      onResult: (_, result) => seen.push(result),
    });
    const started = Date.now();
    assert.deepEqual(await handler({ Records: [record('m1', 'x')] }, contextWith(1_500)), failures(['m1']));
    const took = Date.now() - started;
    assert.ok(took >= 400 && took < 1_400, `reported in ${took} ms: the 1.5 s left less the 1 s margin`);
    assert.equal(seen[0]?.outcome, 'failed');
    assert.equal((await store.inspect('sqs:m1'))?.state, 'released');
    hang = false;
    assert.deepEqual(await handler({ Records: [record('m1', 'x')] }, contextWith(30_000)), failures([]));
    assert.deepEqual(
      seen.map((r) => [r.outcome, 'attempt' in r ? r.attempt : undefined]),
      [
        ['failed', 1],
        ['processed', 2],
      ],
    );
  });

  it('a store that cannot be reached: every record reported (unclaimed), nothing ran', async () => {
    const down = { claim: () => Promise.reject(new Error('ECONNREFUSED')) } as unknown as Store;
    let ran = 0;
    const seen: string[] = [];
    const handler = sqsBatch(down, () => ran++, { logger: false, onResult: (_, r) => seen.push(r.outcome) });
    assert.deepEqual(
      await handler({ Records: [record('m1', 'a'), record('m2', 'b')] }),
      failures(['m1', 'm2']),
    );
    assert.equal(ran, 0);
    assert.deepEqual(seen, ['unclaimed', 'unclaimed']);
  });

  it('a key of your own dedups one event sent as two messages (in one batch: the second is in flight, then a duplicate)', async () => {
    let ran = 0;
    const handler = sqsBatch(
      memoryStore(),
      async () => {
        ran++;
        await new Promise((resolve) => setTimeout(resolve, 10));
      },
      { logger: false, key: (r) => `orders:${JSON.parse(r.body).orderId}` },
    );
    const body = JSON.stringify({ orderId: 42 });
    assert.deepEqual(await handler({ Records: [record('m1', body), record('m2', body)] }), failures(['m2']));
    assert.deepEqual(await handler({ Records: [record('m2', body)] }), failures([]));
    assert.equal(ran, 1);
  });

  it('runs a standard queue batch concurrently, at most `concurrency` at once', async () => {
    let running = 0;
    let most = 0;
    const handler = sqsBatch(
      memoryStore(),
      async () => {
        most = Math.max(most, ++running);
        await new Promise((resolve) => setTimeout(resolve, 10));
        running--;
      },
      { logger: false, concurrency: 3 },
    );
    const records = Array.from({ length: 10 }, (_, i) => record(`m${i}`, 'x'));
    assert.deepEqual(await handler({ Records: records }), failures([]));
    assert.equal(most, 3);
  });
});
