/**
 * The long-poll consumer's calls of the client (./sqs-poll.ts): each one's promise (a method that
 * throws is a refusal), its deletes, batched and resent, and its heartbeat.
 */
import { Runs } from './settle.js';

/** What the deletes need of the client (SqsClient's method, named here so this file imports no other). */
interface Deletes {
  deleteMessageBatch(input: {
    QueueUrl: string;
    Entries: { Id: string; ReceiptHandle: string }[];
  }): PromiseLike<{ readonly Failed?: readonly unknown[] | undefined }>;
}

/** What the heartbeat and the visibility changes need of the client. */
interface Beats {
  changeMessageVisibilityBatch(input: {
    QueueUrl: string;
    Entries: { Id: string; ReceiptHandle: string; VisibilityTimeout: number }[];
  }): PromiseLike<unknown>;
  changeMessageVisibility(input: {
    QueueUrl: string;
    ReceiptHandle: string;
    VisibilityTimeout: number;
  }): PromiseLike<unknown>;
}

/**
 * A held message made visible in `ms` (a retry's delay, 0 for a hand-back). Sent after the beats in
 * flight that name the message, if any: SQS applies calls in no promised order, and a beat landing
 * after it would put the retry (or the hand-back) off by a whole visibility timeout. Waits for them
 * at most `beatWaitMs`: a client call may never answer (a dead connection, no request timeout), and
 * a retry waiting on it for ever would hold its slot, and `stop()`, for ever too.
 */
export function visibility(sqs: Beats, queueUrl: string, beatWaitMs: number) {
  return async (m: Beating, ms: number): Promise<unknown> => {
    if (m.beats && m.beats.size > 0) await landedOr([...m.beats], beatWaitMs);
    return called(() =>
      sqs.changeMessageVisibility({
        QueueUrl: queueUrl,
        ReceiptHandle: m.handle,
        VisibilityTimeout: Math.min(Math.ceil(ms / 1_000), secondsLeft(m)),
      }),
    );
  };
}

/** Once every one of `calls` (none rejects) has settled, or `ms` has passed. */
function landedOr(calls: Promise<unknown>[], ms: number): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    Promise.all(calls),
    new Promise((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** A message held by the consumer, as the heartbeat reads it. */
export interface Beating {
  readonly handle: string;
  readonly receivedAt: number;
  /**
   * The heartbeat calls in flight that named this message (none rejects): each until it settles,
   * an earlier beat's too (a slow call may still be out when the next beat names the message).
   */
  beats?: Set<Promise<unknown>>;
}

/** SQS's longest visibility, counted from the receive: 12 hours, in seconds. */
export const MAX_VISIBILITY_S = 43_200;

/** DeleteMessageBatch sends of one batch at most: the first and two for its `Failed` entries. */
const DELETE_SENDS = 3;

/**
 * A call of the client, its promise: a method that throws instead of rejecting (a client of one's
 * own, a wrapper's bug) rejects here, handled where a refusal is, never thrown out of a timer (a
 * crash) or a beat (an unhandled rejection). What is no promise resolves to itself.
 */
export function called<T>(call: () => T | PromiseLike<T>): Promise<T> {
  try {
    return Promise.resolve(call());
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * The deletes of one turn of the event loop sent together, ten per call. The entries SQS answers
 * as `Failed` (not the sender's fault: an internal error, a throttle) are sent again, up to
 * {@link DELETE_SENDS} sends in all. A delete SQS still refuses (or a crash before it is sent)
 * leaves the message to come back after its visibility: a duplicate to once(), deleted then.
 */
export function deleter(sqs: Deletes, queueUrl: string) {
  let queue: string[] = [];
  const sent = new Runs();
  const send = async (entries: { Id: string; ReceiptHandle: string }[]) => {
    for (let sends = 1; entries.length > 0 && sends <= DELETE_SENDS; sends++) {
      const Entries = entries;
      const answer = await called(() => sqs.deleteMessageBatch({ QueueUrl: queueUrl, Entries }));
      const failed = Array.isArray(answer?.Failed) ? (answer.Failed as unknown[]) : [];
      const again = new Set(
        failed.flatMap((entry) => {
          const { Id, SenderFault } = (entry ?? {}) as { Id?: unknown; SenderFault?: unknown };
          return SenderFault === true ? [] : [Id];
        }),
      );
      entries = entries.filter((entry) => again.has(entry.Id));
    }
  };
  const flush = () => {
    const handles = queue;
    queue = [];
    for (let i = 0; i < handles.length; i += 10)
      sent.add(
        send(handles.slice(i, i + 10).map((ReceiptHandle, j) => ({ Id: String(j), ReceiptHandle }))).catch(
          () => {},
        ),
      );
  };
  return {
    add(receiptHandle: string) {
      if (queue.push(receiptHandle) === 1) setImmediate(flush);
      else if (queue.length === 10) flush();
    },
    async drain() {
      flush();
      await sent.settled();
    },
  };
}

/**
 * The visibility a held message may still be given: SQS refuses to extend it past 12 hours after
 * the receive (a few seconds kept back for the receive's own time in flight).
 */
export function secondsLeft(m: Beating): number {
  return Math.max(0, MAX_VISIBILITY_S - 5 - Math.ceil((Date.now() - m.receivedAt) / 1_000));
}

/**
 * The held messages' visibility extended, ten per call. A failed extension is not retried: the
 * next beat tries again, and a message that became visible meanwhile is redelivered elsewhere,
 * where once() defers it while this run holds its key. Each call names only the messages still
 * held when it is sent: one settled while an earlier call of the beat was in flight (deleted, or
 * given its retry's visibility) is not extended after its settle. A call in flight is kept on each
 * message it names (`beats`): a retry's or a hand-back's visibility is set once it has landed (or
 * after a bounded wait: {@link visibility}).
 */
export async function heartbeat(
  sqs: Beats,
  queueUrl: string,
  held: ReadonlyMap<string, Beating>,
  visibleS: number,
): Promise<void> {
  const beating = [...held.values()];
  for (let i = 0; i < beating.length; i += 10) {
    const Entries = beating
      .slice(i, i + 10)
      .filter((m) => held.get(m.handle) === m)
      .map((m, j) => ({
        Id: String(j),
        ReceiptHandle: m.handle,
        VisibilityTimeout: Math.min(visibleS, secondsLeft(m)),
      }))
      .filter((entry) => entry.VisibilityTimeout > 0);
    if (Entries.length === 0) continue;
    const call = called(() => sqs.changeMessageVisibilityBatch({ QueueUrl: queueUrl, Entries })).catch(
      () => {},
    );
    const named = Entries.map((entry) => held.get(entry.ReceiptHandle)).filter((m) => m !== undefined);
    for (const m of named) {
      m.beats ??= new Set();
      m.beats.add(call);
    }
    await call;
    for (const m of named) m.beats?.delete(call);
  }
}
