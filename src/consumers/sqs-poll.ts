/**
 * SQS long-poll consumers (AWS SDK v3's `SQS` client, or anything with its methods):
 * `consumeOnce(sqs, queueUrl, store, work, options)` receives with long polls, runs `work` once per
 * message under `once()`, at most `concurrency` at a time (it never receives more than it has free
 * slots for), and settles each message in SQS's own verbs. Processed and duplicate messages are
 * deleted (`DeleteMessageBatch`, the deletes of one turn of the event loop together). A failure is
 * left in the queue and made visible again after its delay (`ChangeMessageVisibility`): SQS then
 * redelivers the same message, its receive count up, so no copy is needed. A message that failed
 * `maxAttempts` times (or was redelivered after as many runs that were killed) is sent to
 * `deadLetterQueueUrl` with the reason in its message attributes, and deleted only once that send
 * succeeded. While messages are held, their visibility is extended every third of
 * `visibilityTimeout` (`ChangeMessageVisibilityBatch`), so a long run is not redelivered to another
 * consumer. A settle SQS refuses never loses a message: it comes back when its visibility ends.
 * The client's types are written here, as far as the adapter uses them: no runtime import of it.
 */
import { ConfigError } from '../errors.js';
import { type Duration, parseDuration, resolveTimings, type Store, type WorkContext } from '../once.js';
import {
  type ConsumerOptions,
  type ConsumerResult,
  consumerRunner,
  Runs,
  retryDelayOf,
  type Verdict,
} from './settle.js';
import { type Beating, called, deleter, heartbeat, MAX_VISIBILITY_S, visibility } from './sqs-calls.js';
import { pause, slots } from './sqs-slots.js';

/** A message attribute, as ReceiveMessage gives it and SendMessage takes it. */
export interface SqsMessageAttribute {
  readonly DataType?: string | undefined;
  readonly StringValue?: string | undefined;
  readonly BinaryValue?: Uint8Array | undefined;
}

/** A received message (the SDK's `Message`), as far as the adapter reads it. */
export interface SqsMessage {
  readonly MessageId?: string | undefined;
  readonly ReceiptHandle?: string | undefined;
  readonly Body?: string | undefined;
  /** System attributes: ApproximateReceiveCount, MessageGroupId (FIFO), SentTimestamp... */
  readonly Attributes?: Readonly<Partial<Record<string, string>>> | undefined;
  readonly MessageAttributes?: Readonly<Record<string, SqsMessageAttribute>> | undefined;
}

type CallOptions = { abortSignal?: AbortSignal };
type BatchFailures = { readonly Failed?: readonly unknown[] | undefined };

/** The SDK v3 aggregated client (`new SQS({...})` of @aws-sdk/client-sqs), as far as it is used. */
export interface SqsClient {
  receiveMessage(
    input: {
      QueueUrl: string;
      MaxNumberOfMessages: number;
      WaitTimeSeconds: number;
      VisibilityTimeout: number;
      AttributeNames: string[];
      MessageSystemAttributeNames: string[];
      MessageAttributeNames: string[];
    },
    options?: CallOptions,
  ): Promise<{ readonly Messages?: readonly SqsMessage[] | undefined }>;
  deleteMessageBatch(
    input: { QueueUrl: string; Entries: { Id: string; ReceiptHandle: string }[] },
    options?: CallOptions,
  ): Promise<BatchFailures>;
  changeMessageVisibility(
    input: { QueueUrl: string; ReceiptHandle: string; VisibilityTimeout: number },
    options?: CallOptions,
  ): Promise<unknown>;
  changeMessageVisibilityBatch(
    input: { QueueUrl: string; Entries: { Id: string; ReceiptHandle: string; VisibilityTimeout: number }[] },
    options?: CallOptions,
  ): Promise<BatchFailures>;
  sendMessage(
    input: {
      QueueUrl: string;
      MessageBody: string;
      MessageAttributes?: Record<
        string,
        { DataType: string; StringValue?: string; BinaryValue?: Uint8Array }
      >;
      MessageGroupId?: string;
      MessageDeduplicationId?: string;
    },
    options?: CallOptions,
  ): Promise<{ readonly MessageId?: string | undefined }>;
}

export interface SqsConsumerOptions extends ConsumerOptions<SqsMessage> {
  /**
   * Where a message goes after its last attempt (a FIFO queue's must be FIFO too). Required: a
   * poison message is never deleted unrecorded, and never looped. Give the queue of your
   * RedrivePolicy: its redrive stays the backstop for messages this adapter never settles.
   */
  deadLetterQueueUrl: string;
  /**
   * Messages held at once (running, or waiting behind their FIFO group). One receiver per batch of
   * 10 (the last one smaller), each asking for its batch once that many slots are free. At most
   * 120,000 (SQS's in-flight limit of a standard queue).
   * @default 10
   */
  concurrency?: number;
  /** The long poll of each receive, 0 to 20 s. @default 20 */
  waitTimeSeconds?: number;
  /**
   * How long a received message stays invisible (set by the receive, whatever the queue's default),
   * extended every third of it while held. The time a killed consumer's messages take to come back.
   * @default timeout (30 s), rounded up to whole seconds
   */
  visibilityTimeout?: Duration;
}

/** A running consumer. */
export interface SqsConsumer {
  /**
   * Stops receiving (the pending long polls are aborted), hands back at once the messages received
   * and not started (visibility 0), waits for the runs it started and sends their deletes.
   */
  stop(): Promise<void>;
  /** Resolves when receiving ends: `stop()`, or an error SQS will not answer otherwise (a missing queue). */
  readonly closed: Promise<Error | undefined>;
}

/** The message attributes a dead-letter copy carries beside the message's own (10 at most in all). */
export const DEAD_LETTER_ATTRIBUTES = {
  reason: 'Onceonly-Reason',
  messageId: 'Onceonly-Message-Id',
  queueUrl: 'Onceonly-Queue-Url',
} as const;

/**
 * The longest a retry's (or a hand-back's) visibility waits for a heartbeat call in flight that
 * named its message: a call that has not answered by then may never answer.
 */
const BEAT_WAIT_MAX_MS = 10_000;
/** The spread of an in-flight deferral (see handle). */
const IN_FLIGHT_SPREAD_MS = 8_000;
/** The most messages held at once: SQS's in-flight limit of a standard queue, 120,000. */
const MAX_CONCURRENCY = 120_000;
/** Receive errors: retried after a pause, doubled up to this. */
const RECEIVE_BACKOFF_MS = { min: 500, max: 20_000 };

/** A message held by the consumer: received, not yet settled. */
interface Held extends Beating {
  readonly message: SqsMessage;
}

/**
 * Consumes `queueUrl` with `work` run once per message (`once()` under `sqs:<MessageId>` by default,
 * the key of `sqsBatch` too; or give `key`).
 *
 * @example
 * const sqs = new SQS({ region: 'eu-west-1' });
 * const consumer = await consumeOnce(sqs, queueUrl, store, async (message, { attempt, signal }) => {
 *   await ship(JSON.parse(message.Body ?? ''), { attempt, signal });
 * }, { deadLetterQueueUrl, concurrency: 10, timeout: '20s', maxAttempts: 5 });
 */
export async function consumeOnce(
  sqs: SqsClient,
  queueUrl: string,
  store: Store,
  work: (message: SqsMessage, ctx: WorkContext) => unknown,
  options: SqsConsumerOptions,
): Promise<SqsConsumer> {
  const { deadLetterQueueUrl, concurrency = 10, waitTimeSeconds = 20, visibilityTimeout, ...rest } = options;
  const settings = checked(queueUrl, deadLetterQueueUrl, concurrency, waitTimeSeconds);
  const run = consumerRunner<SqsMessage>(store, work, rest, sqsKey);
  const visibleS = visibilitySeconds(visibilityTimeout ?? resolveTimings(rest).timeoutMs);
  const failedCopyMs = fallingBack(retryDelayOf(rest.retryDelay));
  const fifo = queueUrl.endsWith('.fifo');
  const held = new Map<string, Held>();
  const deletes = deleter(sqs, queueUrl);
  const running = new Runs();
  const calls = new Runs();
  const receives = new Set<AbortController>();
  let stopping = false;

  const beatEveryMs = Math.max(100, (visibleS * 1_000) / 3);
  // A retry waits for the beats in flight that name its message: at most until the next beat
  // would have been sent, and never past BEAT_WAIT_MAX_MS (see visibility()).
  const setVisibility = visibility(sqs, queueUrl, Math.min(beatEveryMs, BEAT_WAIT_MAX_MS));
  // Handed back at once, for another consumer (or, on a FIFO queue, for the group's order).
  const handBack = (m: Held) => {
    held.delete(m.handle);
    calls.add(setVisibility(m, 0).catch(() => {}));
  };

  const settle = async (m: Held, verdict: Verdict): Promise<void> => {
    if (verdict.action === 'ack') return deletes.add(m.handle);
    if (verdict.action === 'retry') return void (await setVisibility(m, verdict.delayMs));
    // The copy first, then the delete: a crash between the two leaves the message to come back
    // and be copied again (a FIFO dead-letter queue drops that second copy within its 5 minute
    // deduplication window), never no copy.
    await called(() => sqs.sendMessage(deadLetter(m.message, verdict.reason, queueUrl, deadLetterQueueUrl)));
    deletes.add(m.handle);
  };

  /** Runs and settles one message: true when it is done with (deleted, or dead-lettered). */
  const handle = async (m: Held): Promise<boolean> => {
    const { verdict: given, result } = await run(m.message, {
      first: m.message.Attributes?.ApproximateReceiveCount === '1',
    });
    const verdict = spread(given, result);
    // No more heartbeats: one landing after the retry's visibility would move the retry later.
    held.delete(m.handle);
    try {
      await settle(m, verdict);
      return verdict.action !== 'retry';
    } catch {
      // SQS refused (the dead-letter queue is missing or full, the receipt handle expired, the
      // network is gone): the message comes back after a pause, or after its visibility if even
      // that is refused, and once() answers for what already ran.
      await setVisibility(m, failedCopyMs(1)).catch(() => {});
      return false;
    }
  };

  const inOrder = fifoGroups(handle, handBack, () => stopping);
  const pool = slots(concurrency);
  const start = (message: SqsMessage) => {
    const m: Held = { message, handle: message.ReceiptHandle ?? '', receivedAt: Date.now() };
    if (m.handle === '') return pool.release(1);
    held.set(m.handle, m);
    if (stopping) {
      handBack(m);
      return pool.release(1);
    }
    const one = fifo ? inOrder(m) : handle(m);
    running.add(one.finally(() => pool.release(1)));
  };

  const beat = setInterval(() => void heartbeat(sqs, queueUrl, held, visibleS), beatEveryMs);
  beat.unref?.();

  const stopReceiving = () => {
    stopping = true;
    pool.close();
    for (const abort of receives) abort.abort();
  };

  /**
   * One receiver: a long poll for up to `most` messages (once as many slots are free), again and
   * again until stop() or a fatal error, which ends every receiver.
   */
  const receiver = async (most: number): Promise<Error | undefined> => {
    let backoff = RECEIVE_BACKOFF_MS.min;
    while (!stopping) {
      const n = await pool.take(most);
      if (stopping) return pool.release(n);
      const abort = new AbortController();
      receives.add(abort);
      try {
        const { Messages = [] } = await called(() =>
          sqs.receiveMessage(receiveInput(queueUrl, n, settings.waitTimeSeconds, visibleS), {
            abortSignal: abort.signal,
          }),
        );
        backoff = RECEIVE_BACKOFF_MS.min;
        pool.release(n - Math.min(n, Messages.length));
        for (const message of Messages.slice(0, n)) start(message);
        // More than asked for (no SQS does so): back at once, unrun.
        for (const message of Messages.slice(n))
          if (message.ReceiptHandle)
            handBack({ message, handle: message.ReceiptHandle, receivedAt: Date.now() });
      } catch (error) {
        pool.release(n);
        if (stopping) return undefined;
        if (fatal(error)) {
          stopReceiving();
          return error instanceof Error ? error : new Error(String(error));
        }
        await pause(backoff, receives);
        backoff = Math.min(RECEIVE_BACKOFF_MS.max, backoff * 2);
      } finally {
        receives.delete(abort);
      }
    }
    return undefined;
  };

  const closed = (async () => {
    // As many receivers as batches of 10 make the concurrency (the last one's smaller).
    const receivers = Array.from({ length: Math.ceil(concurrency / 10) }, (_, i) =>
      receiver(Math.min(10, concurrency - i * 10)),
    );
    const ends = await Promise.all(receivers);
    return ends.find((end) => end !== undefined);
  })();

  return {
    closed,
    async stop() {
      stopReceiving();
      await closed;
      await running.settled();
      clearInterval(beat);
      await Promise.all([deletes.drain(), calls.settled()]);
    },
  };
}

/** A receive of up to `n` messages, with every attribute (the handler may read them; a dead letter copies them). */
function receiveInput(queueUrl: string, n: number, waitTimeSeconds: number, visibleS: number) {
  return {
    QueueUrl: queueUrl,
    MaxNumberOfMessages: n,
    WaitTimeSeconds: waitTimeSeconds,
    VisibilityTimeout: visibleS,
    // Both names: AttributeNames, all the query protocol (SDK 3.410 and before) knows, and
    // MessageSystemAttributeNames, which the JSON protocol's releases prefer.
    AttributeNames: ['All'],
    MessageSystemAttributeNames: ['All'],
    MessageAttributeNames: ['All'],
  };
}

/**
 * A message in flight elsewhere is deferred to its lease's end plus up to half a second at
 * random, so that the messages a killed process held, which all come back at once, do not keep
 * sharing their runs (and a killer message's fate: each run it kills spends their attempts).
 * SQS counts visibility in whole seconds, and a receive takes every message visible: a spread
 * must span many seconds to part them. Here up to 8 s more (with 3 s, the chaos run saw a good
 * message killed beside a killer message six times, into the dead letters, about one run in five).
 */
function spread(verdict: Verdict, result: ConsumerResult): Verdict {
  return verdict.action === 'retry' && result.outcome === 'in-flight'
    ? { action: 'retry', delayMs: verdict.delayMs + Math.random() * IN_FLIGHT_SPREAD_MS }
    : verdict;
}

/** `sqs:<MessageId>`: the same on every redelivery of one message (and the key of `sqsBatch`). */
export function sqsKey(message: SqsMessage): string {
  if (typeof message.MessageId !== 'string' || message.MessageId === '')
    throw new TypeError('the message has no MessageId');
  return `sqs:${message.MessageId}`;
}

function checked(queueUrl: string, deadLetterQueueUrl: string, concurrency: number, waitTimeSeconds: number) {
  const invalid = (message: string) => new ConfigError('invalid_option', `onceonly: ${message}`);
  if (typeof queueUrl !== 'string' || queueUrl === '') throw invalid('consumeOnce needs the queue URL');
  if (typeof deadLetterQueueUrl !== 'string' || deadLetterQueueUrl === '')
    throw invalid(
      'consumeOnce needs deadLetterQueueUrl: a message that failed maxAttempts times is sent there (with the reason) before it is deleted; give the queue your RedrivePolicy names',
    );
  if (deadLetterQueueUrl === queueUrl) throw invalid('deadLetterQueueUrl must not be the queue itself');
  if (queueUrl.endsWith('.fifo') && !deadLetterQueueUrl.endsWith('.fifo'))
    throw invalid('the dead-letter queue of a FIFO queue must be a FIFO queue (SQS requires it)');
  if (!Number.isSafeInteger(concurrency) || concurrency < 1)
    throw invalid(`concurrency must be a positive integer, got ${concurrency}`);
  // A receiver per 10: a concurrency past this is a mistake (a unit, a byte count), not a pool.
  if (concurrency > MAX_CONCURRENCY)
    throw invalid(`concurrency must be at most ${MAX_CONCURRENCY}, got ${concurrency}`);
  if (!Number.isInteger(waitTimeSeconds) || waitTimeSeconds < 0 || waitTimeSeconds > 20)
    throw invalid(`waitTimeSeconds must be an integer from 0 to 20, got ${waitTimeSeconds}`);
  return { waitTimeSeconds };
}

function visibilitySeconds(duration: Duration): number {
  const seconds = Math.ceil(parseDuration(duration, 'visibilityTimeout') / 1_000);
  if (seconds < 1 || seconds > MAX_VISIBILITY_S)
    throw new ConfigError(
      'invalid_option',
      `onceonly: visibilityTimeout must be from 1 s to 12 h (SQS's limits), got ${seconds} s`,
    );
  return seconds;
}

/**
 * FIFO queues: the messages of one MessageGroupId run one at a time, in the order received. The
 * first that is not done with (a retry, or a settle SQS refused) hands the rest of its group back
 * unrun: SQS returns none of a group while one of it is in flight, so they come after it again.
 */
function fifoGroups(
  handle: (m: Held) => Promise<boolean>,
  handBack: (m: Held) => void,
  stopping: () => boolean,
) {
  const groups = new Map<string, { tail: Promise<unknown>; broken: boolean; waiting: number }>();
  return (m: Held): Promise<void> => {
    const id = m.message.Attributes?.MessageGroupId ?? '';
    const g = groups.get(id) ?? { tail: Promise.resolve(), broken: false, waiting: 0 };
    groups.set(id, g);
    g.waiting++;
    const mine = g.tail
      .then(async () => {
        if (g.broken || stopping()) return handBack(m);
        // Broken unless done with: a handle that threw after all must not run the rest out of order.
        if (!(await handle(m).catch(() => false))) g.broken = true;
      })
      .finally(() => {
        if (--g.waiting === 0) groups.delete(id);
      });
    g.tail = mine;
    return mine;
  };
}

/**
 * A retry delay that never throws: a retryDelay of one's own that threw (or gave no duration) is
 * the default delay, as consumerRunner's verdicts fall back to it, never a message left unsettled.
 */
function fallingBack(delayOf: (attempt: number) => number): (attempt: number) => number {
  const byDefault = retryDelayOf(undefined);
  return (attempt) => {
    try {
      return delayOf(attempt);
    } catch {
      return byDefault(attempt);
    }
  };
}

/** The errors that end the consumer: its queue does not exist. Any other is retried after a pause. */
function fatal(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return name === 'QueueDoesNotExist' || name === 'AWS.SimpleQueueService.NonExistentQueue';
}

/** The copy of a message sent to the dead-letter queue: its body and attributes, and the reason. */
function deadLetter(message: SqsMessage, reason: string, queueUrl: string, deadLetterQueueUrl: string) {
  const own = Object.entries(message.MessageAttributes ?? {}).flatMap(([name, value]) =>
    value.DataType
      ? [[name, { DataType: value.DataType, StringValue: value.StringValue, BinaryValue: value.BinaryValue }]]
      : [],
  );
  // SQS takes 10 attributes: the message's own are kept whole, ours added as far as they fit.
  const ours = [
    [DEAD_LETTER_ATTRIBUTES.reason, reason.slice(0, 1_000)],
    [DEAD_LETTER_ATTRIBUTES.messageId, message.MessageId ?? ''],
    [DEAD_LETTER_ATTRIBUTES.queueUrl, queueUrl],
  ]
    .filter(([, value]) => value !== '')
    .map(([name, value]) => [name, { DataType: 'String', StringValue: value }] as const)
    .slice(0, Math.max(0, 10 - own.length));
  const id = message.MessageId || `onceonly-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  return {
    QueueUrl: deadLetterQueueUrl,
    MessageBody: message.Body ?? '',
    MessageAttributes: Object.fromEntries([...own, ...ours]) as Record<string, { DataType: string }>,
    ...(deadLetterQueueUrl.endsWith('.fifo')
      ? { MessageGroupId: message.Attributes?.MessageGroupId ?? 'onceonly', MessageDeduplicationId: id }
      : {}),
  };
}
