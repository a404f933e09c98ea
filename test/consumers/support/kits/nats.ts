/**
 * The chaos kit of NATS JetStream: a stream on `<prefix>.>` that keeps every copy (its duplicate
 * window is the shortest, 100 ms, and each publishing waits it out first, so that copies published
 * with the same Nats-Msg-Id all reach the consumers), one durable pull consumer shared by every
 * process (ack_wait 2 s: a killed process's messages come back soon), `consumeOnce`, and the dead
 * letters in `<prefix>_dead`.
 */
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { consumeOnce } from '../../../../src/consumers/nats.js';
import { servers } from '../../../support/servers.js';
import { type ChaosKit, IN_FLIGHT } from '../chaos.js';

async function withConnection<T>(fn: (nc: NatsConnection) => Promise<T>): Promise<T> {
  const nc = await connect({ servers: servers.nats });
  try {
    return await fn(nc);
  } finally {
    await nc.drain();
  }
}

export const kit: ChaosKit = {
  name: 'nats',
  setup: (stream) =>
    withConnection(async (nc) => {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: stream, subjects: [`${stream}.>`], duplicate_window: 100_000_000 });
      await jsm.consumers.add(stream, {
        durable_name: 'work',
        ack_policy: AckPolicy.Explicit,
        ack_wait: 2_000_000_000,
      });
    }),
  publish: (stream, ids) =>
    withConnection(async (nc) => {
      await new Promise((resolve) => setTimeout(resolve, 150));
      const js = jetstream(nc);
      await Promise.all(ids.map((id) => js.publish(`${stream}.msgs`, JSON.stringify({ id }), { msgID: id })));
    }),
  deadLettered: (stream) =>
    withConnection(async (nc) => {
      const jsm = await jetstreamManager(nc);
      const info = await jsm.streams.info(`${stream}_dead`).catch(() => undefined);
      if (!info || info.state.messages === 0) return [];
      const ids: string[] = [];
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
        const m = await jsm.streams.getMessage(`${stream}_dead`, { seq }).catch(() => null);
        if (m) ids.push(m.header.get('Nats-Msg-Id'));
      }
      return ids;
    }),
  teardown: (stream) =>
    withConnection(async (nc) => {
      const jsm = await jetstreamManager(nc);
      for (const name of [stream, `${stream}_dead`]) await jsm.streams.delete(name).catch(() => {});
    }),
  async consume(stream, store, work, { confirmed, ...options }) {
    const nc = await connect({ servers: servers.nats });
    const js = jetstream(nc);
    const consumer = await consumeOnce(
      js,
      await js.consumers.get(stream, 'work'),
      store,
      (message, ctx) => work(message.json<{ id: string }>().id, ctx),
      {
        ...options,
        headers,
        concurrency: IN_FLIGHT,
        onResult: (message, result) => {
          if (result.outcome === 'processed') confirmed(message.json<{ id: string }>().id, result.attempt);
        },
      },
    );
    return async () => {
      await consumer.stop();
      await nc.drain().catch(() => {});
    };
  },
};
