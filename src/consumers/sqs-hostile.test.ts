/**
 * sqsBatch against batches and contexts SQS never sends but a test invocation or a misrouted
 * trigger may: each invocation ends in an answer or a clear TypeError before anything runs, never
 * a record dropped as done without running.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { Store } from '../core/types.js';
import { memoryStore } from '../stores/memory.js';
import { type SqsEvent, type SqsLambdaContext, type SqsRecord, sqsBatch } from './sqs.js';

const QUEUE = 'arn:aws:sqs:us-east-2:123456789012:my-queue';
const record = (messageId: string, body = 'ok', queue = QUEUE): SqsRecord => ({
  messageId,
  body,
  eventSourceARN: queue,
});
const context = (extra: Record<string, unknown> = {}) => ({
  callbackWaitsForEmptyEventLoop: true,
  getRemainingTimeInMillis: () => 30_000,
  ...extra,
});
const ids = (answer: { batchItemFailures: { itemIdentifier: string }[] }) =>
  answer.batchItemFailures.map((f) => f.itemIdentifier);

/** A memory store that counts its calls. */
function counted(): { store: Store; calls: string[] } {
  const inner = memoryStore();
  const calls: string[] = [];
  const store = new Proxy(inner, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(String(name));
        return value.apply(target, args);
      };
    },
  });
  return { store, calls };
}

const invoke = (handler: ReturnType<typeof sqsBatch>, event: unknown, ctx: unknown = context()) =>
  handler(event as SqsEvent, ctx as SqsLambdaContext);

describe('sqsBatch: malformed batches', () => {
  it('empty Records: nothing to report, the store untouched', async () => {
    const { store, calls } = counted();
    const handler = sqsBatch(store, () => {}, { logger: false });
    assert.deepEqual(await invoke(handler, { Records: [] }), { batchItemFailures: [] });
    assert.deepEqual(calls, []);
  });

  it('a record without a messageId (or not an object) is refused with a TypeError before anything runs: never keyed as "sqs:undefined"', async () => {
    for (const bad of [
      { body: 'x' },
      { messageId: '', body: 'x' },
      { messageId: 5, body: 'x' },
      null,
      'm1',
    ]) {
      const { store, calls } = counted();
      const ran: unknown[] = [];
      const handler = sqsBatch(store, (r) => ran.push(r), { logger: false });
      await assert.rejects(invoke(handler, { Records: [record('ok-1'), bad] }), (error: Error) => {
        assert.ok(error instanceof TypeError);
        assert.match(error.message, /messageId/);
        return true;
      });
      assert.deepEqual(calls, [], `${JSON.stringify(bad)}: the store is not touched`);
      assert.deepEqual(ran, []);
    }
  });

  it('with a key of your own, a record without a messageId is refused too: it could not be reported', async () => {
    const { store } = counted();
    const ran: string[] = [];
    const handler = sqsBatch(store, (r) => ran.push(r.body), { logger: false, key: (r) => `k:${r.body}` });
    // With a key of your own, a messageId is still needed to report the record.
    await assert.rejects(invoke(handler, { Records: [{ body: 'a' }, { body: 'b' }] }), /messageId/);
    assert.deepEqual(ran, []);
  });

  it('an eventSourceARN that is no text is a standard queue, not a throw', async () => {
    const handler = sqsBatch(memoryStore(), () => {}, { logger: false });
    const odd = { ...record('m1'), eventSourceARN: 5 } as unknown as SqsRecord;
    assert.deepEqual(await invoke(handler, { Records: [odd] }), { batchItemFailures: [] });
  });

  it('the same messageId twice in one batch runs once, and is not reported when it succeeded', async () => {
    const ran: string[] = [];
    const handler = sqsBatch(
      memoryStore(),
      async (r) => {
        ran.push(r.messageId);
        await new Promise((resolve) => setTimeout(resolve, 20));
      },
      { logger: false },
    );
    const answer = await invoke(handler, { Records: [record('m1'), record('m2'), record('m1')] });
    assert.deepEqual(ids(answer), [], 'm1 processed: nothing to redeliver');
    assert.deepEqual(ran.sort(), ['m1', 'm2']);
  });

  it('the same messageId twice, failing: reported once', async () => {
    const handler = sqsBatch(
      memoryStore(),
      () => {
        throw new Error('down');
      },
      { logger: false },
    );
    const answer = await invoke(handler, { Records: [record('m1'), record('m1')] });
    assert.deepEqual(ids(answer), ['m1']);
  });
});

describe('sqsBatch: work that throws what is no Error', () => {
  for (const [name, thrown] of [
    ['a string', 'boom'],
    ['undefined', undefined],
    ['null', null],
    ['an object', { code: 42 }],
    ['a number', 7],
  ] as const) {
    it(`${name}: the record is reported, the claim released, a redelivery runs it again`, async () => {
      const store = memoryStore();
      let fail = true;
      const handler = sqsBatch(
        store,
        async () => {
          if (fail) throw thrown;
        },
        { logger: false },
      );
      const event = { Records: [record('m1'), record('m2', 'ok')] };
      assert.deepEqual(ids(await invoke(handler, event)), ['m1', 'm2']);
      assert.equal((await store.inspect('sqs:m1'))?.state, 'released');
      fail = false;
      assert.deepEqual(ids(await invoke(handler, event)), []);
    });
  }
});

describe('sqsBatch: odd contexts', () => {
  const contexts: [string, () => unknown][] = [
    ['a frozen context', () => Object.freeze(context())],
    ['getRemainingTimeInMillis not a function', () => context({ getRemainingTimeInMillis: 1 })],
    [
      'getRemainingTimeInMillis that throws',
      () =>
        context({
          getRemainingTimeInMillis: () => {
            throw new Error('no clock');
          },
        }),
    ],
    ['remaining time past 2^31 ms', () => context({ getRemainingTimeInMillis: () => 2 ** 40 })],
    ['a context that is a string', () => 'context'],
  ];
  for (const [name, make] of contexts) {
    it(`${name}: the batch runs`, async () => {
      const ran: string[] = [];
      const handler = sqsBatch(memoryStore(), (r) => ran.push(r.messageId), { logger: false });
      assert.deepEqual(ids(await invoke(handler, { Records: [record('m1')] }, make())), []);
      assert.deepEqual(ran, ['m1']);
    });
  }

  it('no time left past the margin: every record reported without a claim or a run', async () => {
    for (const left of [0, 500, -10]) {
      const { store, calls } = counted();
      const ran: string[] = [];
      const handler = sqsBatch(store, (r) => ran.push(r.messageId), { logger: false });
      const answer = await invoke(
        handler,
        { Records: [record('m1'), record('m2')] },
        context({ getRemainingTimeInMillis: () => left }),
      );
      assert.deepEqual(ids(answer), ['m1', 'm2'], `${left} ms left`);
      assert.deepEqual(ran, []);
      assert.deepEqual(calls, []);
    }
  });
});
