/**
 * The long-poll consumer's calls of the client (./sqs-poll.ts): each one's promise (a method that
 * throws is a refusal), and its deletes, batched and resent.
 */
import { Runs } from './settle.js';

/** What the deletes need of the client (SqsClient's method, named here so this file imports no other). */
interface Deletes {
  deleteMessageBatch(input: {
    QueueUrl: string;
    Entries: { Id: string; ReceiptHandle: string }[];
  }): PromiseLike<{ readonly Failed?: readonly unknown[] | undefined }>;
}

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
