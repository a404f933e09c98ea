/**
 * NATS JetStream: a stream per queue and a durable pull consumer on it (explicit acks), drained with
 * the client's `consume()` iterator, `concurrency` messages running at once: by hand the same loop
 * an application writes (a slot per message, the handler awaited, then `ack()`), or `consumeOnce`.
 */
import { AckPolicy, type JsMsg, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, headers } from '@nats-io/transport-node';
import { consumeOnce } from '../../../src/consumers/nats.js';
import { servers } from '../../../test/support/servers.js';
import type { BenchKit } from './kit.js';

const nc = await connect({ servers: servers.nats });
const js = jetstream(nc);
const jsm = await jetstreamManager(nc);
const name = (queue: string) => queue.replace(/[^\w-]/g, '_');

export const kit: BenchKit = {
  name: 'NATS JetStream (@nats-io/jetstream)',
  async setup(queue) {
    const stream = name(queue);
    await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
    await jsm.consumers.add(stream, { durable_name: 'work', ack_policy: AckPolicy.Explicit });
  },
  async fill(queue, n, prefix, body) {
    const stream = name(queue);
    for (let i = 0; i < n; i += 500)
      await Promise.all(
        Array.from({ length: Math.min(500, n - i) }, (_, j) =>
          js.publish(`${stream}.m`, body, { msgID: `${prefix}-${i + j}` }),
        ),
      );
  },
  async consume(queue, concurrency, handler, store) {
    const consumer = await js.consumers.get(name(queue), 'work');
    if (store === undefined) {
      // As a consumer is written by hand: up to `concurrency` handlers awaited, each then acked.
      const messages = await consumer.consume({ max_messages: concurrency });
      const running = new Set<Promise<void>>();
      const loop = (async () => {
        for await (const m of messages) {
          const one = (async (msg: JsMsg) => {
            await handler(msg.headers?.get('Nats-Msg-Id') ?? String(msg.seq));
            msg.ack();
          })(m);
          running.add(one);
          void one.finally(() => running.delete(one));
          while (running.size >= concurrency) await Promise.race(running);
        }
        await Promise.allSettled([...running]);
      })();
      return async () => {
        await messages.close();
        await loop;
      };
    }
    const running = await consumeOnce(js, consumer, store, () => handler(''), {
      logger: false,
      headers,
      concurrency,
    });
    return () => running.stop();
  },
  async teardown(queue) {
    for (const stream of [name(queue), `${name(queue)}_dead`])
      await jsm.streams.delete(stream).catch(() => {});
  },
};

export async function close(): Promise<void> {
  await nc.drain();
}
