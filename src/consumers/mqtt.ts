/**
 * MQTT consumers (mqtt.js, QoS 1, a persistent session): `consumeOnce(client, topic, store, work)`
 * runs `work` once per message under `once()` and answers the broker the only ways MQTT has. MQTT
 * has no nack, no delayed redelivery and no dead-letter queue: a QoS 1 message is either
 * acknowledged (PUBACK, whatever its reason code: the broker then forgets it) or not yet, and the
 * broker resends an unacknowledged one only when the session reconnects, flagged `dup`. So:
 *
 * - processed, duplicate: PUBACK, after the run (mqtt.js would send it before the work ends).
 * - retry: the message stays unacknowledged and runs again in this process after the delay; if the
 *   process dies meanwhile, the broker resends it when the session reconnects. Not a re-publish:
 *   MQTT cannot delay a copy, and a copy on the topic would reach every other subscriber of it.
 * - dead: published to `<topic>/dead` (QoS 1, the reason in the user property `onceonly-reason`),
 *   PUBACKed by the broker, and only then the original's PUBACK. A dead letter the broker had no
 *   subscriber for (MQTT 5 reason code 16) is dropped by it, so it counts as not published: the
 *   original stays unacknowledged and the copy is tried again.
 *
 * mqtt.js sends its PUBACK when `handleMessage`'s callback is called, and reads nothing else from
 * the connection until then (with `customHandleAcks` too: its reason codes only choose the PUBACK's
 * code, and any code ends the message). The adapter takes over `handleMessage` for its topic: it
 * releases mqtt.js at once without a PUBACK and writes the PUBACK itself (four bytes, the same in
 * MQTT 3.1.1 and 5) once the message is settled, on the connection it came from only: after a
 * reconnect the broker has resent it, and that copy is settled instead. The mqtt.js types are
 * written here, as far as the adapter uses them.
 */
import { ConfigError } from '../errors.js';
import type { Store, WorkContext } from '../once.js';
import { type ConsumerOptions, consumerRunner, Runs, retryDelayOf, type Verdict } from './settle.js';

/** A received PUBLISH packet, as mqtt.js gives it. */
export interface MqttMessage {
  readonly topic: string;
  readonly payload: Uint8Array | string;
  readonly qos: number;
  /** Set by the broker on a resend of a message this session did not acknowledge. */
  readonly dup: boolean;
  /** The packet id: per connection, reused once acknowledged; never a message's identity. */
  readonly messageId?: number | undefined;
  readonly properties?: MqttProperties | undefined;
}

/** The MQTT 5 publish properties the adapter reads or copies. */
export interface MqttProperties {
  readonly payloadFormatIndicator?: boolean | undefined;
  readonly contentType?: string | undefined;
  readonly responseTopic?: string | undefined;
  readonly correlationData?: Uint8Array | undefined;
  readonly userProperties?: Readonly<Record<string, string | string[]>> | undefined;
}

/** An mqtt.js client (`mqtt.connect(url, options)`), as far as the adapter uses it. */
export interface MqttClient {
  readonly connected: boolean;
  /** The connection's stream; a new one on each reconnect. */
  readonly stream: { write(chunk: Uint8Array): unknown };
  readonly options: {
    readonly clean?: boolean | undefined;
    readonly protocolVersion?: number | undefined;
    readonly properties?:
      | { readonly sessionExpiryInterval?: number | undefined; readonly receiveMaximum?: number | undefined }
      | undefined;
  };
  handleMessage(packet: MqttMessage, callback: (error?: Error) => void): void;
  subscribe(
    topic: string,
    options: { qos: 1 },
    callback: (error: Error | null, granted?: Array<{ qos: number }>) => void,
  ): unknown;
  publish(
    topic: string,
    payload: Uint8Array | string,
    options: { qos: 1; retain: false; properties?: Record<string, unknown> },
    callback: (error?: Error, packet?: { messageId?: number | undefined }) => void,
  ): unknown;
  on(event: 'packetreceive', listener: (packet: MqttAck) => void): unknown;
  removeListener(event: 'packetreceive', listener: (packet: MqttAck) => void): unknown;
}

/** What the adapter reads of a received packet: a PUBACK's reason code. */
export interface MqttAck {
  readonly cmd: string;
  readonly messageId?: number | undefined;
  readonly reasonCode?: number | undefined;
}

export interface MqttConsumerOptions extends ConsumerOptions<MqttMessage> {
  /**
   * Where a message goes after its last attempt. It needs a subscriber with a persistent session
   * (the broker drops a message no subscription matches), and must not match `topic`.
   * @default '<the message's topic>/dead'
   */
  deadLetterTopic?: string | undefined;
}

/** A running consumer. */
export interface MqttConsumer {
  readonly topic: string;
  /**
   * Stops running messages and waits for the runs it started to settle. Messages that arrive after,
   * and those waiting for a retry, stay unacknowledged: the session holds them for its next
   * connection. Then end the client (not unsubscribe: the session would stop receiving the topic).
   */
  stop(): Promise<void>;
}

const NO_MATCHING_SUBSCRIBERS = 16;
/** Released without a PUBACK: mqtt.js sends none when `handleMessage`'s callback gets an error. */
const WITHHELD = new Error('onceonly: the PUBACK is sent once the message is settled');

/**
 * Consumes `topic` (a filter; `$share/<group>/<filter>` to split it between consumers) at QoS 1
 * with `work` run once per message: `once()` under `mqtt:<topic>:<id>`, the id from the user
 * property `message-id`, else the MQTT 5 correlation data (or give `key`). Call it before the client
 * connects (`mqtt.connect()` and this in the same tick): the session's held messages arrive at
 * once, and mqtt.js acknowledges what no handler took over. The client needs a fixed `clientId` and
 * a persistent session; its `properties.receiveMaximum` (MQTT 5) is the messages run at once.
 *
 * @example
 * const client = mqtt.connect('mqtt://localhost', {
 *   protocolVersion: 5, clientId: 'orders-1', clean: false,
 *   properties: { sessionExpiryInterval: 86_400, receiveMaximum: 16 },
 * });
 * const consumer = await consumeOnce(client, '$share/shipping/orders', store, async (message, { attempt, signal }) => {
 *   await ship(JSON.parse(message.payload.toString()), { attempt, signal });
 * }, { timeout: '20s', maxAttempts: 5 });
 */
export async function consumeOnce(
  client: MqttClient,
  topic: string,
  store: Store,
  work: (message: MqttMessage, ctx: WorkContext) => unknown,
  options: MqttConsumerOptions = {},
): Promise<MqttConsumer> {
  const { deadLetterTopic, ...rest } = options;
  checkClient(client, topic, deadLetterTopic);
  const v5 = client.options.protocolVersion === 5;
  const run = consumerRunner(store, work, rest, (message) => `mqtt:${message.topic}:${idOf(message, v5)}`);
  // once()'s logger: the console by default, none with `false`.
  const logger = rest.logger === false ? undefined : (rest.logger ?? console);
  const backoff = retryDelayOf(rest.retryDelay);
  const running = new Runs();
  const sleepers = new Set<() => void>();
  let stopping = false;

  // The packet ids whose last PUBACK said no subscriber matched: such a publish reached nobody.
  const unheard = new Set<number>();
  const onPacket = (packet: MqttAck) => {
    if (packet.cmd !== 'puback' || packet.messageId === undefined) return;
    if (packet.reasonCode === NO_MATCHING_SUBSCRIBERS) unheard.add(packet.messageId);
    else unheard.delete(packet.messageId);
  };
  client.on('packetreceive', onPacket);

  /** Whether the connection a message came on is still the client's: only there can it be acknowledged. */
  const current = (stream: MqttClient['stream']) => client.stream === stream && client.connected;
  /** Waits `ms`; false when stopped first. */
  const pause = (ms: number) =>
    new Promise<boolean>((resolve) => {
      if (stopping) return resolve(false);
      const wake = () => {
        clearTimeout(timer);
        sleepers.delete(wake);
        resolve(false);
      };
      const timer = setTimeout(() => {
        sleepers.delete(wake);
        resolve(true);
      }, ms);
      sleepers.add(wake);
    });

  const publishDead = (message: MqttMessage, reason: string) =>
    new Promise<string | undefined>((resolve) => {
      const target = deadLetterTopic ?? `${message.topic}/dead`;
      const properties = v5 ? { properties: deadProperties(message, reason) } : {};
      client.publish(target, message.payload, { qos: 1, retain: false, ...properties }, (error, packet) => {
        if (error) return resolve(`${error.name}: ${error.message}`);
        const id = packet?.messageId;
        resolve(id !== undefined && unheard.delete(id) ? `no subscriber on ${target}` : undefined);
      });
    });

  /** Publishes the dead letter, again after a wait while it fails; false when given up. */
  const deadLetter = async (message: MqttMessage, reason: string, stream: MqttClient['stream']) => {
    for (let attempt = 1; ; attempt++) {
      const failure = await publishDead(message, reason);
      if (failure === undefined) return true;
      const wait = backoff(Math.min(attempt, 6));
      logger?.warn(
        `onceonly: the dead letter of an MQTT message on ${message.topic} was not published (${failure}); the message stays unacknowledged, tried again in ${wait} ms`,
      );
      if (!(await pause(wait)) || !current(stream)) return false;
    }
  };

  // At most receiveMaximum messages run at once, whatever the broker sends: Mosquitto 2.0 goes past
  // a client's receive maximum (measured: 142 unacknowledged on a session of 4), and thousands of
  // runs at once cost more than they bring (their store calls, their garbage). Those over it wait
  // here, in order, unacknowledged; mqtt.js is never held back (it would stop reading the
  // connection: the dead letters' PUBACKs, the keepalive's PINGRESP).
  const slots = runSlots(client.options.properties?.receiveMaximum);

  const deliver = async (message: MqttMessage, stream: MqttClient['stream'], id: number) => {
    let first = !message.dup;
    for (;;) {
      const wait = slots.take();
      if (wait) await wait;
      // Stopped while it waited: left unacknowledged, for the session's next connection.
      if (stopping) return slots.give();
      let verdict: Verdict;
      try {
        ({ verdict } = await run(message, { first }));
      } finally {
        slots.give();
      }
      first = false;
      if (verdict.action === 'retry') {
        // Unacknowledged while it waits: a crash meanwhile, and the session resends it.
        if (!(await pause(verdict.delayMs)) || !current(stream)) return;
        continue;
      }
      if (verdict.action === 'dead' && !(await deadLetter(message, verdict.reason, stream))) return;
      // On a later connection the broker has resent it: that copy is acknowledged instead.
      if (current(stream)) puback(stream, id);
      return;
    }
  };

  const { puback, flush: flushAcks } = pubacks();

  const matches = topicFilter(topic);
  const previous = client.handleMessage.bind(client);
  client.handleMessage = (packet, callback) => {
    const id = packet.messageId;
    if (packet.qos !== 1 || id === undefined || !matches(packet.topic)) return previous(packet, callback);
    callback(WITHHELD);
    // Stopped: left unacknowledged, for the session's next connection.
    if (stopping) return;
    const one = deliver(packet, client.stream, id).catch(() => {});
    running.add(one);
  };

  await new Promise<void>((resolve, reject) => {
    client.subscribe(topic, { qos: 1 }, (error, granted) => {
      if (error) return reject(error);
      const qos = granted?.[0]?.qos;
      if (qos !== 1)
        return reject(new Error(`onceonly: the broker granted QoS ${qos} for ${topic}, not QoS 1`));
      resolve();
    });
  });

  return {
    topic,
    async stop() {
      stopping = true;
      for (const wake of [...sleepers]) wake();
      await running.settled();
      // The last PUBACKs now, before the caller ends the client.
      flushAcks();
      client.removeListener('packetreceive', onPacket);
    },
  };
}

/**
 * The id of a message: its user property `message-id`, else its MQTT 5 correlation data (as text
 * when it is UTF-8, else `0x` and its hex). MQTT 3.1.1 has neither: its packet id only numbers the
 * messages in flight on one connection.
 */
function idOf(message: MqttMessage, v5: boolean): string {
  const own = message.properties?.userProperties?.['message-id'];
  const ids = own === undefined ? [] : Array.isArray(own) ? own : [own];
  if (ids.length > 1) throw new TypeError('the message has several message-id user properties');
  if (typeof ids[0] === 'string' && ids[0] !== '') return ids[0];
  const data = message.properties?.correlationData;
  if (data && data.length > 0) {
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(data);
    } catch {
      return `0x${Array.from(data, (byte) => byte.toString(16).padStart(2, '0')).join('')}`;
    }
  }
  throw new TypeError(
    v5
      ? 'the message has no message-id user property and no correlation data: set one when publishing, or give key'
      : 'an MQTT 3.1.1 message carries no id (its packet id is per connection): give key',
  );
}

/** The dead letter's properties: the message's own, less those of one hop, and the reason. */
function deadProperties(message: MqttMessage, reason: string): Record<string, unknown> {
  const { payloadFormatIndicator, contentType, responseTopic, correlationData, userProperties } =
    message.properties ?? {};
  const kept = Object.entries({ payloadFormatIndicator, contentType, responseTopic, correlationData });
  return {
    ...Object.fromEntries(kept.filter(([, v]) => v !== undefined)),
    userProperties: {
      ...userProperties,
      'onceonly-reason': reason.slice(0, 1_000),
      'onceonly-topic': message.topic,
    },
  };
}

/** Whether a topic filter (`+`, `#`, `$share/<group>/`) matches a topic name. */
export function topicMatches(filter: string, topic: string): boolean {
  return topicFilter(filter)(topic);
}

function topicFilter(filter: string): (topic: string) => boolean {
  const levels = (filter.startsWith('$share/') ? filter.split('/').slice(2).join('/') : filter).split('/');
  // A wildcard in the first level does not match the broker's own `$` topics.
  const wild = levels[0] === '+' || levels[0] === '#';
  const match = (topic: string) => {
    if (wild && topic.startsWith('$')) return false;
    const names = topic.split('/');
    for (let i = 0; i < levels.length; i++) {
      if (levels[i] === '#') return true;
      if (i >= names.length || (levels[i] !== '+' && levels[i] !== names[i])) return false;
    }
    return levels.length === names.length;
  };
  // The last topic's answer kept: a consumer mostly sees one topic, not split again per message.
  let last: string | undefined;
  let answer = false;
  return (topic) => {
    if (topic !== last) {
      answer = match(topic);
      last = topic;
    }
    return answer;
  };
}

/**
 * PUBACKs with no reason code (success), four bytes each (the same in MQTT 3.1.1 and 5). Those of
 * one tick go out together at its end, one write per connection (not a write per message).
 */
function pubacks() {
  const acks = new Map<MqttClient['stream'], number[]>();
  const flush = () => {
    for (const [stream, ids] of acks) {
      const packets = new Uint8Array(ids.length * 4);
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i]!;
        packets[i * 4] = 0x40;
        packets[i * 4 + 1] = 0x02;
        packets[i * 4 + 2] = id >> 8;
        packets[i * 4 + 3] = id & 0xff;
      }
      stream.write(packets);
    }
    acks.clear();
  };
  const puback = (stream: MqttClient['stream'], id: number) => {
    const ids = acks.get(stream);
    if (ids) return void ids.push(id);
    if (acks.size === 0) nextTick(flush);
    acks.set(stream, [id]);
  };
  return { puback, flush };
}

/**
 * A counting semaphore for the runs: `take()` is undefined when a slot is free (taken at once, no
 * await on the common path), else a promise of the next slot given back, first come first served.
 */
function runSlots(limit: number | undefined) {
  let free =
    limit !== undefined && Number.isSafeInteger(limit) && limit > 0 ? limit : Number.POSITIVE_INFINITY;
  let waiting: Array<() => void> = [];
  let head = 0;
  return {
    take(): Promise<void> | undefined {
      if (free > 0) {
        free--;
        return undefined;
      }
      return new Promise<void>((resolve) => waiting.push(resolve));
    },
    give(): void {
      if (head < waiting.length) {
        const next = waiting[head++]!;
        if (head === waiting.length) {
          waiting = [];
          head = 0;
        }
        next();
      } else free++;
    },
  };
}

const nextTick: (fn: () => void) => void =
  (globalThis as { process?: { nextTick?: (fn: () => void) => void } }).process?.nextTick ?? queueMicrotask;

/** Refuses a client whose unacknowledged messages would not survive, or that already connected. */
function checkClient(client: MqttClient, topic: string, deadLetterTopic: string | undefined): void {
  const { clean, protocolVersion, properties } = client.options;
  const fail = (message: string) => {
    throw new ConfigError('invalid_option', `onceonly: ${message}`);
  };
  if (clean !== false || (protocolVersion === 5 && !((properties?.sessionExpiryInterval ?? 0) > 0)))
    fail(
      'the MQTT client needs a persistent session (clean: false and, with MQTT 5, properties.sessionExpiryInterval above 0): without one the broker drops the unacknowledged messages when the connection ends',
    );
  if (client.connected)
    fail(
      'call consumeOnce before the MQTT client connects (mqtt.connect() and consumeOnce in the same tick): mqtt.js acknowledges the messages the session held before any handler takes them over',
    );
  if (deadLetterTopic === undefined ? /(^|\/)#$/.test(topic) : topicMatches(topic, deadLetterTopic))
    fail(
      `the dead letters of ${topic} would come back to it: give a deadLetterTopic the filter does not match`,
    );
}
