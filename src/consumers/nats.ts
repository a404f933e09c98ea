/**
 * NATS JetStream consumers (@nats-io/jetstream): `consumeOnce(js, consumer, store, work)` pulls from
 * a durable pull consumer, runs `work` once per message under `once()`, at most `concurrency` at a
 * time, and settles each message in JetStream's own verbs. Processed and duplicate messages are
 * acknowledged (`ack()`). A failure is negatively acknowledged with its delay (`nak(ms)`): the
 * server redelivers it then, and it holds no slot of ours while it waits. A message that failed
 * `maxAttempts` times (or was redelivered after as many runs that were killed) is copied to a
 * dead-letter subject with the reason in its headers (JetStream has no dead-letter queue, only
 * advisories), and terminated (`term()`) once the copy's PubAck is in. While a message runs, the
 * server is told every third of the consumer's `ack_wait` that it is still being worked on
 * (`working()`), so a long run is not redelivered to another consumer. The client's types are
 * written here, as far as the adapter uses them: no runtime import of it.
 */
import { ConfigError } from '../errors.js';
import type { Store, WorkContext } from '../once.js';
import { type ConsumerOptions, consumerRunner, Runs, retryDelayOf, type Verdict } from './settle.js';

/** Message headers, as the client's `MsgHdrs` (`headers()` of @nats-io/transport-node makes them). */
export interface NatsHeaders {
  get(key: string): string;
  set(key: string, value: string): void;
  append(key: string, value: string): void;
  has(key: string): boolean;
  keys(): string[];
  values(key: string): string[];
}

/** A message delivered by a JetStream consumer (the client's `JsMsg`). */
export interface NatsMessage {
  readonly subject: string;
  readonly data: Uint8Array;
  readonly headers: NatsHeaders | undefined;
  readonly seq: number;
  readonly info: { readonly stream: string; readonly deliveryCount: number };
  ack(): void;
  nak(millis?: number): void;
  working(): void;
  term(reason?: string): void;
  json<T = unknown>(): T;
  string(): string;
}

/** The messages of `consumer.consume()`: an async iterator that can be closed. */
export interface NatsConsumerMessages<M extends NatsMessage = NatsMessage> extends AsyncIterable<M> {
  close(): Promise<unknown>;
}

/** A durable pull consumer, as `js.consumers.get(stream, name)` gives it. */
export interface NatsPullConsumer<M extends NatsMessage = NatsMessage> {
  info(cached?: boolean): Promise<{
    readonly stream_name: string;
    readonly name: string;
    readonly config: {
      readonly ack_policy?: string;
      readonly ack_wait?: number;
      readonly max_deliver?: number;
    };
  }>;
  consume(options?: { max_messages?: number }): Promise<NatsConsumerMessages<M>>;
}

/** The JetStream client (`jetstream(nc)`), to publish dead letters (and declare their stream). */
export interface NatsJetStream {
  publish(
    subject: string,
    payload?: Uint8Array,
    options?: { headers?: NatsHeaders; timeout?: number },
  ): Promise<{ readonly stream: string; readonly seq: number; readonly duplicate?: boolean }>;
  jetstreamManager(): Promise<{
    readonly streams: {
      info(name: string): Promise<unknown>;
      add(config: { name: string; subjects: string[] }): Promise<unknown>;
    };
  }>;
}

export interface NatsConsumerOptions<M extends NatsMessage = NatsMessage> extends ConsumerOptions<M> {
  /**
   * The client's header factory, `headers` of @nats-io/transport-node (or @nats-io/nats-core): a
   * dead-letter copy carries the message's own headers and the reason.
   */
  headers: () => NatsHeaders;
  /**
   * Messages run at once; also the most the client pulls ahead (`max_messages`).
   * @default 16
   */
  concurrency?: number;
  /**
   * Where a message goes after its last attempt. By default `onceonly.dead.<stream>`, captured by
   * the stream `<stream>_dead` (created on first use). Another subject must be captured by a
   * stream of yours: a copy no stream stores is refused, and the message is redelivered.
   */
  deadLetterSubject?: string;
}

/** A running consumer. */
export interface NatsConsumer {
  /**
   * Stops pulling and waits for the messages it is running to settle; the ones pulled ahead and not
   * started are handed back at once (`nak()`). Then drain the connection (`nc.drain()`) so the last
   * acknowledgements reach the server.
   */
  stop(): Promise<void>;
  /** Resolves when the consumption ends (`stop()`, or the client's end), with the client's error if any. */
  readonly closed: Promise<Error | undefined>;
}

/** The headers a dead-letter copy carries beside the message's own. */
export const DEAD_LETTER_HEADERS = {
  reason: 'Onceonly-Reason',
  stream: 'Onceonly-Stream',
  subject: 'Onceonly-Subject',
  seq: 'Onceonly-Seq',
} as const;

/**
 * Consumes a durable pull consumer (explicit acks) with `work` run once per message (`once()` under
 * `nats:<stream>:<Nats-Msg-Id>` by default: publish with `msgID`, or the stream sequence
 * `nats:<stream>:#<seq>` when a message has none; or give `key`).
 *
 * @example
 * const js = jetstream(nc);
 * const consumer = await js.consumers.get('ORDERS', 'ship');
 * const running = await consumeOnce(js, consumer, store, async (msg, { attempt, signal }) => {
 *   await ship(msg.json(), { attempt, signal });
 * }, { headers, concurrency: 16, timeout: '20s', maxAttempts: 5 });
 */
export async function consumeOnce<M extends NatsMessage = NatsMessage>(
  js: NatsJetStream,
  consumer: NatsPullConsumer<M>,
  store: Store,
  work: (message: M, ctx: WorkContext) => unknown,
  options: NatsConsumerOptions<M>,
): Promise<NatsConsumer> {
  const { headers, concurrency = 16, deadLetterSubject, ...rest } = options;
  if (typeof headers !== 'function')
    throw new ConfigError(
      'invalid_option',
      "onceonly: consumeOnce needs the client's header factory (import { headers } from '@nats-io/transport-node')",
    );
  if (!Number.isSafeInteger(concurrency) || concurrency < 1)
    throw new ConfigError(
      'invalid_option',
      `onceonly: concurrency must be a positive integer, got ${concurrency}`,
    );
  const run = consumerRunner<M>(store, work, rest, natsKey);
  const info = await consumer.info(true);
  checkConsumer(info, rest.maxAttempts ?? 5);
  const stream = info.stream_name;
  const beatMs = Math.max(100, Math.floor(ackWaitMs(info.config.ack_wait) / 3));
  const failedCopyMs = retryDelayOf(rest.retryDelay);
  const dead = deadLetters(js, stream, deadLetterSubject, headers);

  const replies = outbox();
  const settle = async (message: M, verdict: Verdict): Promise<void> => {
    if (verdict.action === 'ack') return replies.send(() => message.ack());
    if (verdict.action === 'retry') return replies.send(() => message.nak(verdict.delayMs));
    // The copy first, confirmed by its PubAck, then the termination: a crash between the two
    // leaves the message to be redelivered and copied again (the dead stream drops the second
    // copy of a message with a Nats-Msg-Id as a duplicate), never no copy.
    // term() without its reason: servers before 2.11 do not read `+TERM <reason>` as a termination
    // (and redeliver); the reason is in the copy's headers.
    await dead.publish(message, verdict.reason);
    message.term();
  };

  const handle = async (message: M): Promise<void> => {
    const { verdict } = await run(message, {
      first: message.info.deliveryCount === 1,
      heartbeat: { everyMs: beatMs, beat: working(message) },
    });
    try {
      await settle(message, verdict);
    } catch {
      // The copy was refused or the connection is gone: redelivered later (or at once, to another
      // consumer, if the connection is gone), and once() answers for what already ran.
      try {
        message.nak(failedCopyMs(1));
      } catch {}
    }
  };

  const messages = await consumer.consume({ max_messages: concurrency });
  const running = new Runs();
  let stopping = false;
  const closed = (async (): Promise<Error | undefined> => {
    try {
      for await (const message of messages) {
        // Pulled ahead but not started: back to the server at once, for another consumer.
        if (stopping) {
          replies.send(() => message.nak());
          continue;
        }
        const one = handle(message);
        running.add(one);
        // The iterator is not read while every slot is taken: the client pulls no more meanwhile.
        while (running.size >= concurrency) await running.any();
      }
      return undefined;
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    } finally {
      await running.settled();
      replies.flush();
    }
  })();

  return {
    closed,
    async stop() {
      stopping = true;
      await messages.close().catch(() => {});
      await closed;
      replies.flush();
    },
  };
}

/**
 * Acks and naks sent together once per turn of the event loop: the client writes to its socket once
 * per microtask wave, and the runs end in waves of their own, so sent one by one they cost a write
 * each (half the CPU of a consumer). Delayed by one turn at most: a crash in between only makes a
 * message redelivered, a duplicate to once().
 */
function outbox() {
  let queue: Array<() => void> = [];
  const flush = () => {
    const replies = queue;
    queue = [];
    for (const reply of replies)
      try {
        reply();
      } catch {
        // The connection is gone: the server redelivers the message.
      }
  };
  const later: (fn: () => void) => unknown =
    typeof setImmediate === 'function' ? setImmediate : (fn) => setTimeout(fn, 0);
  return {
    send(reply: () => void) {
      if (queue.push(reply) === 1) later(flush);
    },
    flush,
  };
}

/** The message's heartbeat (a function made by a call, not a property's: see Beating in settle.ts). */
function working(message: NatsMessage): () => unknown {
  return () => message.working();
}

/** `nats:<stream>:<Nats-Msg-Id>`, or `nats:<stream>:#<seq>` without one (the same on every redelivery). */
export function natsKey(message: NatsMessage): string {
  const id = message.headers?.has('Nats-Msg-Id') ? message.headers.get('Nats-Msg-Id') : '';
  return id ? `nats:${message.info.stream}:${id}` : `nats:${message.info.stream}:#${message.seq}`;
}

/**
 * Refuses a consumer the verdicts cannot be carried out on: without explicit acks (an `all` ack
 * would acknowledge the messages still running before it), or one that stops redelivering a
 * message before its dead letter (`max_deliver`: every redelivery counts, in-flight ones included,
 * and a message past it is never delivered again).
 */
function checkConsumer(info: Awaited<ReturnType<NatsPullConsumer['info']>>, maxAttempts: number): void {
  const { ack_policy, max_deliver } = info.config;
  if (ack_policy !== undefined && ack_policy !== 'explicit')
    throw new ConfigError(
      'invalid_option',
      `onceonly: the consumer ${info.name} acknowledges '${ack_policy}': consumeOnce needs ack_policy 'explicit'`,
    );
  if (max_deliver !== undefined && max_deliver > 0 && max_deliver <= maxAttempts)
    throw new ConfigError(
      'invalid_option',
      `onceonly: the consumer ${info.name} stops at max_deliver ${max_deliver}, not above maxAttempts ${maxAttempts}: a message would be dropped instead of dead-lettered (leave it unlimited, -1)`,
    );
}

/** The consumer's ack_wait in ms (the server's default, 30 s, when it does not say). */
function ackWaitMs(nanos: number | undefined): number {
  return nanos !== undefined && nanos > 0 ? nanos / 1_000_000 : 30_000;
}

/** Publishes dead-letter copies, declaring the default dead-letter stream on first use. */
function deadLetters(
  js: NatsJetStream,
  stream: string,
  subject: string | undefined,
  headers: () => NatsHeaders,
) {
  const target = subject ?? `onceonly.dead.${stream}`;
  let declared: Promise<unknown> | undefined;
  const declare = () => {
    if (subject !== undefined) return;
    if (!declared) {
      declared = (async () => {
        const jsm = await js.jetstreamManager();
        const name = `${stream}_dead`;
        // Created unless it exists (with whatever configuration its owner gave it).
        await jsm.streams.info(name).catch(() => jsm.streams.add({ name, subjects: [target] }));
      })();
      // A failed declaration is tried again by the next dead letter.
      declared.catch(() => {
        declared = undefined;
      });
    }
    return declared;
  };
  return {
    async publish(message: NatsMessage, reason: string): Promise<void> {
      await declare();
      const copy = headers();
      const own = message.headers;
      if (own) for (const key of own.keys()) for (const value of own.values(key)) copy.append(key, value);
      copy.set(DEAD_LETTER_HEADERS.reason, oneLine(reason));
      copy.set(DEAD_LETTER_HEADERS.stream, message.info.stream);
      copy.set(DEAD_LETTER_HEADERS.subject, message.subject);
      copy.set(DEAD_LETTER_HEADERS.seq, String(message.seq));
      await js.publish(target, message.data, { headers: copy });
    },
  };
}

/** A header value: one line (NATS headers end at a line break), at most 1,000 characters. */
function oneLine(text: string): string {
  const flat = text.replace(/[\r\n]+/g, ' ');
  return flat.length > 1_000 ? `${flat.slice(0, 997)}...` : flat;
}
