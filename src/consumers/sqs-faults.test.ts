/**
 * onceonly/sqs's long-poll consumer against a scripted client: the faults ElasticMQ cannot be made
 * to show (sqs-poll.test.ts runs the rest on it). A settle SQS refuses beside a retryDelay that
 * throws, a heartbeat landing after a settle, client methods that throw instead of rejecting,
 * DeleteMessageBatch answering with `Failed` entries, an absurd concurrency. The client keeps its
 * messages in memory, answers every call in the order made and notes each; the store is the real
 * memory store.
 */
import { strict as assert } from 'node:assert';
import { describe, it, type TestContext } from 'node:test';
import { ConfigError } from '../errors.js';
import { memoryStore } from '../stores/memory.js';
import { consumeOnce, type SqsClient, type SqsConsumerOptions, type SqsMessage } from './sqs.js';

const QUEUE = 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders';
const DEAD = 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders-dead';

type Method = keyof SqsClient;
interface Call {
  readonly seq: number;
  readonly method: Method;
  readonly input: { Entries?: { Id: string; ReceiptHandle: string }[]; ReceiptHandle?: string } & Record<
    string,
    unknown
  >;
}

const message = (id: string, group?: string): SqsMessage => ({
  MessageId: id,
  ReceiptHandle: `h-${id}`,
  Body: id,
  Attributes: { ApproximateReceiveCount: '1', ...(group ? { MessageGroupId: group } : {}) },
});

/**
 * A client that hands out `messages` (each once) and answers every other call with success, unless
 * `script` answers it instead. An empty receive waits 20 ms (or its abort): a short long poll.
 */
function scripted(messages: SqsMessage[], script: Partial<Record<Method, (input: any) => unknown>> = {}) {
  const calls: Call[] = [];
  const waiting = [...messages];
  const answer =
    (method: Method, otherwise: (input: any, options?: { abortSignal?: AbortSignal }) => unknown) =>
    (input: any, options?: { abortSignal?: AbortSignal }) => {
      calls.push({ seq: calls.length, method, input });
      const own = script[method];
      return own ? own(input) : otherwise(input, options);
    };
  const client = {
    receiveMessage: answer('receiveMessage', async (input, options) => {
      const Messages = waiting.splice(0, input.MaxNumberOfMessages);
      if (Messages.length > 0) return { Messages };
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 20);
        options?.abortSignal?.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve();
        });
      });
      return { Messages: [] };
    }),
    deleteMessageBatch: answer('deleteMessageBatch', async () => ({ Failed: [] })),
    changeMessageVisibility: answer('changeMessageVisibility', async () => ({})),
    changeMessageVisibilityBatch: answer('changeMessageVisibilityBatch', async () => ({ Failed: [] })),
    sendMessage: answer('sendMessage', async () => ({ MessageId: 'dead-copy' })),
  } as unknown as SqsClient;
  const named = (method: Method) => calls.filter((c) => c.method === method);
  const handles = (call: Call) => (call.input.Entries ?? []).map((e) => e.ReceiptHandle);
  return { client, calls, named, handles };
}

const options = (extra: Partial<SqsConsumerOptions> = {}): SqsConsumerOptions => ({
  logger: false,
  deadLetterQueueUrl: DEAD,
  waitTimeSeconds: 0,
  concurrency: 10,
  ...extra,
});

const waitFor = async (what: string, ok: () => boolean, ms = 3_000) => {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

/**
 * A promise the test settles when it chooses (`settle()`; again is a no-op): resolved, or rejected
 * with `failure` when one is given (a run that fails on cue).
 */
function onCue(failure?: Error): { promise: Promise<void>; settle: () => void } {
  let settle!: () => void;
  const promise = new Promise<void>((resolve, reject) => {
    settle = failure ? () => reject(failure) : resolve;
  });
  return { promise, settle };
}

/** What escaped as an uncaught exception or an unhandled rejection while the test ran. */
function escapes(t: TestContext): unknown[] {
  const seen: unknown[] = [];
  const note = (error: unknown) => void seen.push(error);
  process.on('uncaughtException', note);
  process.on('unhandledRejection', note);
  t.after(() => {
    process.off('uncaughtException', note);
    process.off('unhandledRejection', note);
  });
  return seen;
}

describe('onceonly/sqs consumeOnce: faults of the client', () => {
  it('a FIFO retry whose settle SQS refused, with a retryDelay that throws: set visible after the default delay, the rest of its group handed back at once', async (t) => {
    const escaped = escapes(t);
    let refused = 0;
    const sqs = scripted([message('a', 'g'), message('b', 'g'), message('c', 'g')], {
      changeMessageVisibility: async (input) => {
        if (input.ReceiptHandle === 'h-a' && refused++ === 0) throw new Error('refused (injected)');
        return {};
      },
    });
    const ran: string[] = [];
    const c = await consumeOnce(
      sqs.client,
      `${QUEUE}.fifo`,
      memoryStore(),
      (m) => {
        ran.push(m.Body ?? '');
        if (m.Body === 'a') throw new Error('a fails');
      },
      options({
        deadLetterQueueUrl: `${DEAD}.fifo`,
        retryDelay: () => {
          throw new Error('a retryDelay with a bug');
        },
      }),
    );
    const visibility = (handle: string) =>
      sqs
        .named('changeMessageVisibility')
        .filter((call) => call.input.ReceiptHandle === handle)
        .map((call) => call.input.VisibilityTimeout);
    try {
      await waitFor(
        'the group released',
        () => visibility('h-a').length === 2 && visibility('h-c').length === 1,
      );
    } finally {
      await c.stop();
    }
    assert.deepEqual(ran, ['a'], 'b and c never ran before a');
    const [, delay] = visibility('h-a');
    assert.ok(typeof delay === 'number' && delay >= 1 && delay <= 2, `a default delay, got ${delay} s`);
    assert.deepEqual(visibility('h-b'), [0], 'b handed back');
    assert.deepEqual(visibility('h-c'), [0], 'c handed back');
    assert.deepEqual(escaped, []);
  });

  it('the heartbeat names only the messages still held: none settled while an earlier batch of the beat was in flight', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `m${String(i).padStart(2, '0')}`);
    const { promise: gate, settle: openGate } = onCue();
    let beats = 0;
    const sqs = scripted(
      ids.map((id) => message(id)),
      {
        changeMessageVisibilityBatch: async () => {
          if (beats++ === 0) await gate;
          return { Failed: [] };
        },
      },
    );
    const { promise: late, settle: endLate } = onCue();
    const { promise: early, settle: endEarly } = onCue();
    const c = await consumeOnce(
      sqs.client,
      QUEUE,
      memoryStore(),
      (m) => (m.MessageId! < 'm10' ? late : early),
      options({ concurrency: 20, visibilityTimeout: '1s' }),
    );
    const settledOnes = ids.slice(10).map((id) => `h-${id}`);
    try {
      await waitFor('a beat in flight', () => sqs.named('changeMessageVisibilityBatch').length === 1);
      assert.deepEqual(
        sqs.handles(sqs.named('changeMessageVisibilityBatch')[0]!),
        ids.slice(0, 10).map((id) => `h-${id}`),
      );
      endEarly();
      await waitFor('the ten settled', () =>
        settledOnes.every((h) =>
          sqs.named('deleteMessageBatch').some((call) => sqs.handles(call).includes(h)),
        ),
      );
      const deletedAt = sqs.named('deleteMessageBatch').at(-1)!.seq;
      openGate();
      await new Promise((resolve) => setTimeout(resolve, 500)); // the rest of that beat, and the next
      const after = sqs.named('changeMessageVisibilityBatch').filter((call) => call.seq > deletedAt);
      const extended = after.flatMap((call) => sqs.handles(call)).filter((h) => settledOnes.includes(h));
      assert.deepEqual(extended, [], 'no settled message extended after its delete');
    } finally {
      openGate();
      endLate();
      endEarly();
      await c.stop();
    }
  });

  it('a retry waits for a beat in flight that names its message: its visibility is set after the beat landed, not overtaken by it', async () => {
    const { promise: gate, settle: openGate } = onCue();
    const sqs = scripted([message('r1')], {
      changeMessageVisibilityBatch: async () => {
        await gate;
        return { Failed: [] };
      },
    });
    const { promise: failing, settle: fail } = onCue(new Error('the run failed'));
    const c = await consumeOnce(
      sqs.client,
      QUEUE,
      memoryStore(),
      () => failing,
      options({ visibilityTimeout: '1s', retryDelay: '5s' }),
    );
    try {
      await waitFor('a beat in flight', () => sqs.named('changeMessageVisibilityBatch').length === 1);
      fail();
      await new Promise((resolve) => setTimeout(resolve, 200));
      // SQS applies calls in no promised order: sent now, the retry's visibility could be overtaken
      // by the beat, which would put the retry off by a whole visibility timeout.
      assert.equal(sqs.named('changeMessageVisibility').length, 0, 'the retry waits for the beat');
      openGate();
      await waitFor('the retry', () => sqs.named('changeMessageVisibility').length === 1);
      assert.equal(sqs.named('changeMessageVisibility')[0]!.input.VisibilityTimeout, 5);
    } finally {
      openGate();
      fail();
      await c.stop();
    }
  });

  it('a retry waits for an earlier beat still in flight too, not only the last one that named its message', async () => {
    // The first beat is slow (still out when the next beat, answered at once, names the message):
    // before, only the last beat was waited for, and the slow one could land after the retry.
    const { promise: gate, settle: openGate } = onCue();
    let beats = 0;
    const sqs = scripted([message('r1')], {
      changeMessageVisibilityBatch: async () => {
        if (beats++ === 0) await gate;
        return { Failed: [] };
      },
    });
    const { promise: failing, settle: fail } = onCue(new Error('the run failed'));
    const c = await consumeOnce(
      sqs.client,
      QUEUE,
      memoryStore(),
      () => failing,
      options({ visibilityTimeout: '3s', retryDelay: '5s' }),
    );
    try {
      await waitFor('a second beat', () => sqs.named('changeMessageVisibilityBatch').length === 2);
      await new Promise((resolve) => setTimeout(resolve, 20)); // the second beat answered
      fail();
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(sqs.named('changeMessageVisibility').length, 0, 'the retry waits for the slow beat');
      const openedAt = sqs.calls.length;
      openGate();
      await waitFor('the retry', () => sqs.named('changeMessageVisibility').length === 1);
      assert.ok(sqs.named('changeMessageVisibility')[0]!.seq >= openedAt);
    } finally {
      openGate();
      fail();
      await c.stop();
    }
  });

  it('a beat that never settles holds a retry back at most a beat interval: the retry is sent, stop() resolves', async () => {
    // A client call that never answers (a dead keep-alive connection, no request timeout set):
    // before, the retry waited on it for ever, its slot never freed and stop() never resolved.
    const sqs = scripted([message('r1')], {
      changeMessageVisibilityBatch: () => new Promise(() => {}),
    });
    const { promise: failing, settle: fail } = onCue(new Error('the run failed'));
    const c = await consumeOnce(
      sqs.client,
      QUEUE,
      memoryStore(),
      () => failing,
      options({ visibilityTimeout: '1s', retryDelay: '5s' }),
    );
    let stopped = false;
    try {
      await waitFor('a beat in flight', () => sqs.named('changeMessageVisibilityBatch').length === 1);
      fail();
      await waitFor('the retry', () => sqs.named('changeMessageVisibility').length === 1, 2_000);
      assert.equal(sqs.named('changeMessageVisibility')[0]!.input.VisibilityTimeout, 5);
    } finally {
      fail();
      await Promise.race([
        c.stop().then(() => {
          stopped = true;
        }),
        new Promise((resolve) => setTimeout(resolve, 2_000)),
      ]);
    }
    assert.ok(stopped, 'stop() resolved');
  });

  it('client methods that throw instead of rejecting: no crash, no unhandled rejection, the loop goes on', async (t) => {
    const escaped = escapes(t);
    let receives = 0;
    const throwing = (what: string) => () => {
      throw new Error(`${what} threw (injected)`);
    };
    const sqs = scripted([message('m1'), message('m2')], {
      deleteMessageBatch: throwing('deleteMessageBatch'),
      changeMessageVisibility: throwing('changeMessageVisibility'),
      changeMessageVisibilityBatch: throwing('changeMessageVisibilityBatch'),
    });
    const receive = sqs.client.receiveMessage.bind(sqs.client);
    sqs.client.receiveMessage = (input, callOptions) => {
      if (receives++ === 0) throw new Error('receiveMessage threw (injected)');
      return receive(input, callOptions);
    };
    const results: string[] = [];
    const c = await consumeOnce(
      sqs.client,
      QUEUE,
      memoryStore(),
      async (m) => {
        await new Promise((resolve) => setTimeout(resolve, 400)); // beats while it runs
        if (m.Body === 'm2') throw new Error('m2 fails'); // its retry: changeMessageVisibility
      },
      options({ visibilityTimeout: '1s', onResult: (_m, r) => void results.push(r.outcome) }),
    );
    try {
      await waitFor('both run', () => results.length === 2);
      await new Promise((resolve) => setTimeout(resolve, 100)); // the deletes' turn
      const before = receives;
      await waitFor('receiving on', () => receives > before + 2);
    } finally {
      await c.stop();
    }
    assert.deepEqual(results.sort(), ['failed', 'processed']);
    assert.ok(sqs.named('deleteMessageBatch').length >= 1, 'the delete was tried');
    assert.ok(sqs.named('changeMessageVisibilityBatch').length >= 1, 'a beat was tried');
    assert.deepEqual(
      escaped.map((e) => String(e)),
      [],
    );
  });

  it('refuses a concurrency past 120,000 (or not a positive integer) with a ConfigError', async () => {
    const sqs = scripted([]);
    for (const concurrency of [120_001, 1e9, Number.MAX_SAFE_INTEGER, Number.POSITIVE_INFINITY, 0, -1, 1.5]) {
      await assert.rejects(
        consumeOnce(sqs.client, QUEUE, memoryStore(), () => {}, options({ concurrency })),
        (e: unknown) =>
          e instanceof ConfigError && e.code === 'invalid_option' && /concurrency/.test(e.message),
        String(concurrency),
      );
    }
    const most = await consumeOnce(
      sqs.client,
      QUEUE,
      memoryStore(),
      () => {},
      options({ concurrency: 120_000 }),
    );
    await most.stop();
    assert.equal(await most.closed, undefined);
  });
  it('resends the entries DeleteMessageBatch answers as Failed, up to 3 sends in all; not those of a sender fault', async () => {
    const cases = [
      { failing: 2, senderFault: false, sends: 3 },
      { failing: Number.POSITIVE_INFINITY, senderFault: false, sends: 3 },
      { failing: Number.POSITIVE_INFINITY, senderFault: true, sends: 1 },
    ];
    for (const { failing, senderFault, sends: expected } of cases) {
      let sends = 0;
      const sqs = scripted([message('m1'), message('m2')], {
        deleteMessageBatch: async (input: { Entries: { Id: string; ReceiptHandle: string }[] }) => {
          if (sends++ >= failing) return { Failed: [] };
          const failed = input.Entries.filter((e) => e.ReceiptHandle === 'h-m2');
          return {
            Successful: input.Entries.filter((e) => e.ReceiptHandle !== 'h-m2').map((e) => ({ Id: e.Id })),
            Failed: failed.map((e) => ({ Id: e.Id, SenderFault: senderFault, Code: 'InternalError' })),
          };
        },
      });
      const results: string[] = [];
      const c = await consumeOnce(
        sqs.client,
        QUEUE,
        memoryStore(),
        () => {},
        options({ concurrency: 2, onResult: (_m, r) => void results.push(r.outcome) }),
      );
      await waitFor('both run', () => results.length === 2);
      await c.stop();
      const sent = sqs.named('deleteMessageBatch').map((call) => sqs.handles(call).sort());
      assert.deepEqual(
        sent,
        [['h-m1', 'h-m2'], ['h-m2'], ['h-m2']].slice(0, expected),
        `failing ${failing} times, sender fault ${senderFault}: ${JSON.stringify(sent)}`,
      );
    }
  });
});
