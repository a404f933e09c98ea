/**
 * RabbitMQ consumers (amqplib): `consumeOnce(channel, queue, store, work)` runs `work` once per
 * message under `once()` and settles each message the way RabbitMQ is meant to be used. Processed
 * and duplicate messages are acknowledged. A failure is re-published to a delay queue of the
 * source queue (`<queue>.retry.<ms>`: its TTL dead-letters it back to the queue) and then
 * acknowledged, so the retry waits without holding a prefetch slot. A message that failed
 * `maxAttempts` times (or was redelivered after as many runs that were killed) goes to
 * `<queue>.dead` with the reason in its headers, or to the queue's own dead-letter exchange with
 * `deadLetter: 'dlx'`. Nothing is acknowledged before its copy is confirmed on a confirm channel.
 * The amqplib types are written here, as far as the adapter uses them.
 */
import { ConfigError } from '../errors.js';
import type { Store, WorkContext } from '../once.js';
import { type ConsumerOptions, consumerRunner, Runs, type Verdict } from './settle.js';

/** A delivered message, as amqplib gives it. */
export interface AmqpMessage {
  readonly content: Uint8Array;
  readonly fields: {
    readonly deliveryTag: number;
    readonly redelivered: boolean;
    readonly routingKey?: string;
  };
  readonly properties: {
    readonly messageId?: unknown;
    readonly headers?: Record<string, unknown> | undefined;
    readonly contentType?: unknown;
    readonly contentEncoding?: unknown;
    readonly deliveryMode?: unknown;
    readonly priority?: unknown;
    readonly correlationId?: unknown;
    readonly replyTo?: unknown;
    readonly expiration?: unknown;
    readonly timestamp?: unknown;
    readonly type?: unknown;
    readonly userId?: unknown;
    readonly appId?: unknown;
  };
}

/** An amqplib confirm channel (`createConfirmChannel()`): every copy is confirmed before the ack. */
export interface AmqpChannel {
  consume(
    queue: string,
    onMessage: (message: AmqpMessage | null) => void,
    options?: { noAck?: boolean; consumerTag?: string },
  ): Promise<{ consumerTag: string }>;
  cancel(consumerTag: string): Promise<unknown>;
  ack(message: AmqpMessage): void;
  nack(message: AmqpMessage, allUpTo?: boolean, requeue?: boolean): void;
  assertQueue(
    queue: string,
    options?: { durable?: boolean; arguments?: Record<string, unknown> },
  ): Promise<unknown>;
  sendToQueue(queue: string, content: Uint8Array, options?: Record<string, unknown>): boolean;
  waitForConfirms(): Promise<void>;
}

export interface AmqpConsumerOptions extends ConsumerOptions<AmqpMessage> {
  /**
   * Where a message goes after its last attempt: `queue` publishes it to `<queue>.dead` (declared
   * here; the reason in the header `x-onceonly-reason`), `dlx` rejects it to the queue's own
   * dead-letter exchange (`x-dead-letter-exchange`: without one RabbitMQ drops it).
   * @default 'queue'
   */
  deadLetter?: 'queue' | 'dlx';
  /**
   * The dead-letter queue of `deadLetter: 'queue'`, when it is one of yours (a quorum queue, a
   * length limit): it must exist, and is never declared here. By default `<queue>.dead`, declared
   * as a plain durable queue on first use.
   */
  deadLetterQueue?: string;
  /** The consumer tag (RabbitMQ's by default). */
  consumerTag?: string;
}

/** A running consumer. */
export interface AmqpConsumer {
  readonly consumerTag: string;
  /** Cancels the consumer and waits for the messages it is running to settle. */
  stop(): Promise<void>;
}

/** The header that marks the adapter's own retry copies (redeliveries, not first deliveries). */
const COPY = 'x-onceonly-copy';
/** The pause before a message whose settling failed goes back to its queue. */
const SETTLE_RETRY_MS = 1_000;

/** The delays a retry waits, rounded up to one of these (one delay queue each). */
export const RETRY_STEPS_MS = [
  100, 250, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000, 3_600_000,
];

/**
 * Consumes `queue` with `work` run once per message (`once()` under `amqp:<queue>:<messageId>` by
 * default: set `messageId` when publishing, or give `key`). Set the channel's prefetch for the
 * concurrency you want: each message in flight runs at once.
 *
 * @example
 * const channel = await connection.createConfirmChannel();
 * await channel.prefetch(16);
 * const consumer = await consumeOnce(channel, 'orders', store, async (message, { attempt, signal }) => {
 *   await ship(JSON.parse(message.content.toString()), { attempt, signal });
 * }, { timeout: '20s', maxAttempts: 5 });
 */
export async function consumeOnce(
  channel: AmqpChannel,
  queue: string,
  store: Store,
  work: (message: AmqpMessage, ctx: WorkContext) => unknown,
  options: AmqpConsumerOptions = {},
): Promise<AmqpConsumer> {
  const { deadLetter = 'queue', deadLetterQueue, consumerTag, ...rest } = options;
  if (typeof channel?.waitForConfirms !== 'function')
    throw new ConfigError(
      'invalid_option',
      'onceonly: consumeOnce takes a confirm channel (connection.createConfirmChannel()): a retry or dead-letter copy must be confirmed before the original is acknowledged',
    );
  const run = consumerRunner(store, work, rest, (message) => {
    const id = message.properties.messageId;
    if (typeof id !== 'string' || id === '')
      throw new TypeError('the message has no messageId: set one when publishing, or give key');
    return `amqp:${queue}:${id}`;
  });
  // Declared before every copy (a retry is rare; a queue an operator deleted comes back, where a
  // copy to no queue would be confirmed all the same, and the original acknowledged: lost).
  const declare = (name: string, args?: Record<string, unknown>) =>
    channel.assertQueue(name, { durable: true, ...(args ? { arguments: args } : {}) });
  const running = new Runs();

  const settle = async (message: AmqpMessage, verdict: Verdict): Promise<void> => {
    if (verdict.action === 'ack') return channel.ack(message);
    if (verdict.action === 'dead' && deadLetter === 'dlx') return channel.nack(message, false, false);
    // A copy first, confirmed, then the ack: a crash between them leaves two copies (the second is
    // a duplicate to once()), never none.
    const dead = verdict.action === 'dead';
    const target = dead ? (deadLetterQueue ?? `${queue}.dead`) : retryQueue(queue, verdict.delayMs);
    if (!dead)
      await declare(target, {
        'x-message-ttl': retryStep(verdict.delayMs),
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': queue,
      });
    else if (deadLetterQueue === undefined) await declare(target);
    // A retry copy is marked: it comes back as a redelivery, not a first delivery, so a message
    // whose every run is killed still reaches the dead letters. A dead copy is not: re-driven after
    // a fix, it runs once more.
    const mark = dead ? { 'x-onceonly-reason': verdict.reason.slice(0, 1_000) } : { [COPY]: 1 };
    channel.sendToQueue(target, message.content, copyOf(message, mark));
    await channel.waitForConfirms();
    channel.ack(message);
  };

  const onMessage = (message: AmqpMessage | null) => {
    // null: the broker cancelled the consumer (the queue was deleted); nothing to settle.
    if (message === null) return;
    const one = (async () => {
      const first = !message.fields.redelivered && message.properties.headers?.[COPY] === undefined;
      const { verdict } = await run(message, { first });
      try {
        await settle(message, verdict);
      } catch {
        // The channel closed, or the copy was refused (a full or missing dead-letter queue): the
        // message goes back after a pause (not at once, which would loop hot on a refusing queue),
        // and once() answers for what already ran.
        await new Promise((resolve) => setTimeout(resolve, SETTLE_RETRY_MS));
        try {
          channel.nack(message, false, true);
        } catch {}
      }
    })();
    running.add(one);
  };

  const { consumerTag: tag } = await channel.consume(queue, onMessage, {
    noAck: false,
    ...(consumerTag ? { consumerTag } : {}),
  });
  return {
    consumerTag: tag,
    async stop() {
      await channel.cancel(tag).catch(() => {});
      await running.settled();
    },
  };
}

/** The delay step a retry waits: the first of {@link RETRY_STEPS_MS} at least as long, or the last. */
export function retryStep(delayMs: number): number {
  return RETRY_STEPS_MS.find((step) => step >= delayMs) ?? RETRY_STEPS_MS.at(-1)!;
}

const retryQueue = (queue: string, delayMs: number) => `${queue}.retry.${retryStep(delayMs)}`;

/**
 * The publish options of a copy: the message's own properties, persistent, without its expiration
 * (the delay queue's TTL times it), its user id (RabbitMQ refuses one that is not the consumer's
 * own user, and would close the channel), its `CC` and `BCC` headers (each copy would be routed to
 * their queues again) or a retry mark of an earlier copy.
 */
function copyOf(message: AmqpMessage, headers: Record<string, unknown>): Record<string, unknown> {
  const { headers: own, expiration: _, deliveryMode: __, userId: ___, ...props } = message.properties;
  const { CC: _cc, BCC: _bcc, [COPY]: _copy, ...kept } = own ?? {};
  const defined = Object.fromEntries(Object.entries(props).filter(([, v]) => v !== undefined));
  return { ...defined, persistent: true, headers: { ...kept, ...headers } };
}
