/**
 * onceonly/nats on a real NATS JetStream: acknowledged once processed, a copy acknowledged without
 * a second run, a failure negatively acknowledged with its delay and run as the next attempt, the
 * last failure copied to the dead-letter stream with its reason and terminated, a message without a
 * key dead-lettered untouched, a message in flight elsewhere deferred, working() keeping a long run
 * from being redelivered, stop() waiting for the runs it started, consumers refused that would
 * drop messages.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import {
  AckPolicy,
  type ConsumerConfig,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  jetstream,
  jetstreamManager,
} from '@nats-io/jetstream';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { reachable, servers } from '../../test/support/servers.js';
import { ConfigError } from '../errors.js';
import type { Store } from '../once.js';
import { memoryStore } from '../stores/memory.js';
import { consumeOnce, DEAD_LETTER_HEADERS, type NatsConsumerOptions, natsKey } from './nats.js';
import type { ConsumerResult } from './settle.js';

const quiet = { logger: false as const };
const nanos = (ms: number) => ms * 1_000_000;

if (await reachable('NATS', servers.nats, async () => (await connect({ servers: servers.nats })).close())) {
  describe('onceonly/nats on NATS JetStream', () => {
    let nc: NatsConnection;
    let js: JetStreamClient;
    let jsm: JetStreamManager;
    const streams: string[] = [];
    before(async () => {
      nc = await connect({ servers: servers.nats });
      js = jetstream(nc);
      jsm = await jetstreamManager(nc);
    });
    after(async () => {
      for (const s of streams)
        for (const name of [s, `${s}_dead`]) await jsm.streams.delete(name).catch(() => {});
      await nc.drain();
    });

    /** A stream `<name>` on `<name>.>` and a durable pull consumer on it. */
    const newStream = async (consumer: Partial<ConsumerConfig> = {}) => {
      const name = `oo_nats_${randomBytes(4).toString('hex')}`;
      streams.push(name);
      await jsm.streams.add({ name, subjects: [`${name}.>`] });
      await jsm.consumers.add(name, { durable_name: 'work', ack_policy: AckPolicy.Explicit, ...consumer });
      return name;
    };
    const publish = async (stream: string, body: string, msgID?: string, extra?: Record<string, string>) => {
      const h = headers();
      for (const [k, v] of Object.entries(extra ?? {})) h.set(k, v);
      return js.publish(`${stream}.orders`, body, { headers: h, ...(msgID ? { msgID } : {}) });
    };
    const waitFor = async (what: string, ok: () => boolean | Promise<boolean>, ms = 10_000) => {
      const end = Date.now() + ms;
      while (!(await ok())) {
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    /** Messages not yet acknowledged or terminated by the consumer, delivered or not. */
    const unsettled = async (stream: string, durable = 'work') => {
      const info = await jsm.consumers.info(stream, durable);
      return info.num_pending + info.num_ack_pending;
    };
    const consumer = async (
      stream: string,
      work: (m: JsMsg, attempt: number) => unknown,
      options: Partial<NatsConsumerOptions<JsMsg>> & { store?: Store; durable?: string } = {},
    ) => {
      const { store = memoryStore(), durable = 'work', ...rest } = options;
      return consumeOnce(
        js,
        await js.consumers.get(stream, durable),
        store,
        (m, { attempt }) => work(m, attempt),
        { ...quiet, headers, retryDelay: '100ms', concurrency: 4, ...rest },
      );
    };
    const deadLetters = async (stream: string) => {
      const info = await jsm.streams.info(`${stream}_dead`);
      const out: Array<{ body: string; headers: Record<string, string> }> = [];
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
        const m = await jsm.streams.getMessage(`${stream}_dead`, { seq });
        if (!m) continue;
        const h: Record<string, string> = {};
        for (const k of m.header.keys()) h[k] = m.header.get(k);
        out.push({ body: m.string(), headers: h });
      }
      return out;
    };

    it('acknowledges a processed message, and a copy of it without running it again', async () => {
      const s = await newStream();
      await jsm.consumers.add(s, { durable_name: 'replay', ack_policy: AckPolicy.Explicit });
      const store = memoryStore();
      const ran: string[] = [];
      const c = await consumer(s, (m) => void ran.push(m.string()), { store });
      await publish(s, 'one', 'evt_1');
      await publish(s, 'two', 'evt_2');
      await publish(s, 'three'); // no Nats-Msg-Id: keyed by its stream sequence
      await waitFor('three runs', () => ran.length >= 3);
      await waitFor('every message acknowledged', async () => (await unsettled(s)) === 0);
      // A second consumer on the same stream and store: every message is a copy to once().
      const results: string[] = [];
      const replay = await consumer(s, (m) => void ran.push(`again: ${m.string()}`), {
        store,
        durable: 'replay',
        onResult: (_m, r) => void results.push(r.outcome),
      });
      await waitFor('the copies', () => results.length >= 3);
      await waitFor('every copy acknowledged', async () => (await unsettled(s, 'replay')) === 0);
      await replay.stop();
      await c.stop();
      assert.deepEqual(ran.sort(), ['one', 'three', 'two']);
      assert.deepEqual(results, ['duplicate', 'duplicate', 'duplicate']);
    });

    it('keys a message on its Nats-Msg-Id, or its stream sequence without one', async () => {
      const s = await newStream();
      const keys: string[] = [];
      const c = await consumer(s, (m) => void keys.push(natsKey(m)));
      await publish(s, 'a', 'evt_a');
      const plain = await publish(s, 'b');
      await waitFor('two runs', () => keys.length >= 2);
      await c.stop();
      assert.deepEqual(keys, [`nats:${s}:evt_a`, `nats:${s}:#${plain.seq}`]);
    });

    it('retries a failure with nak(delay) as its next attempt, then acknowledges it', async () => {
      const s = await newStream();
      const attempts: Array<{ attempt: number; at: number; delivery: number }> = [];
      const c = await consumer(
        s,
        (m, attempt) => {
          attempts.push({ attempt, at: Date.now(), delivery: m.info.deliveryCount });
          if (attempt < 3) throw new Error(`not yet (${attempt})`);
        },
        { retryDelay: '400ms' },
      );
      await publish(s, '{}', 'evt_retry');
      await waitFor('the third attempt', () => attempts.length >= 3);
      await waitFor('the ack', async () => (await unsettled(s)) === 0);
      await c.stop();
      assert.deepEqual(
        attempts.map((a) => [a.attempt, a.delivery]),
        [
          [1, 1],
          [2, 2],
          [3, 3],
        ],
      );
      // Redelivered no sooner than its delay: the server held it (a lower bound, never flaky).
      for (let i = 1; i < attempts.length; i++)
        assert.ok(attempts[i]!.at - attempts[i - 1]!.at >= 390, `attempt ${i + 1} waited its delay`);
    });

    it('dead-letters the last failure with its reason and headers, then terminates it; a message without a key untouched', async () => {
      const s = await newStream();
      let runs = 0;
      const results: ConsumerResult['outcome'][] = [];
      const c = await consumer(
        s,
        () => {
          runs++;
          throw new Error('downstream <refused>');
        },
        {
          maxAttempts: 2,
          key: (m) => {
            const order = m.headers?.get('Order-Id');
            if (!order) throw new Error('no Order-Id header');
            return `order:${s}:${order}`;
          },
          onResult: (_m, r) => void results.push(r.outcome),
        },
      );
      const poison = await publish(s, 'poison', 'evt_poison', { 'Order-Id': 'o-1' });
      await publish(s, 'anonymous', 'evt_anonymous');
      await waitFor('two dead letters', async () => (await deadLetters(s).catch(() => [])).length >= 2);
      await waitFor('both settled', async () => (await unsettled(s)) === 0);
      await c.stop();
      assert.equal(runs, 2, 'the poison message ran twice, the anonymous one never');
      assert.deepEqual(results.sort(), ['failed', 'failed', 'invalid']);
      const dead = Object.fromEntries((await deadLetters(s)).map((d) => [d.body, d.headers]));
      assert.match(
        dead.poison?.[DEAD_LETTER_HEADERS.reason] ?? '',
        /failed on attempt 2 of 2: Error: downstream <refused>/,
      );
      assert.equal(dead.poison?.['Order-Id'], 'o-1', 'its own headers kept');
      assert.equal(dead.poison?.['Nats-Msg-Id'], 'evt_poison');
      assert.equal(dead.poison?.[DEAD_LETTER_HEADERS.stream], s);
      assert.equal(dead.poison?.[DEAD_LETTER_HEADERS.subject], `${s}.orders`);
      assert.equal(dead.poison?.[DEAD_LETTER_HEADERS.seq], String(poison.seq));
      assert.match(dead.anonymous?.[DEAD_LETTER_HEADERS.reason] ?? '', /no key: .*no Order-Id header/);
    });

    it('defers a message another consumer is running, which then acknowledges it as a duplicate', async () => {
      const s = await newStream();
      await jsm.consumers.add(s, { durable_name: 'other', ack_policy: AckPolicy.Explicit });
      const store = memoryStore();
      let runs = 0;
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const slow = await consumer(
        s,
        () => {
          runs++;
          return held;
        },
        { store },
      );
      await publish(s, 'once', 'evt_shared');
      await waitFor('the first run', () => runs === 1);
      const results: string[] = [];
      const other = await consumer(s, () => void runs++, {
        store,
        durable: 'other',
        onResult: (_m, r) => void results.push(r.outcome),
      });
      await waitFor('the deferral', () => results.includes('in-flight'));
      assert.equal(await unsettled(s, 'other'), 1, 'deferred, not acknowledged');
      release();
      await waitFor('the duplicate', () => results.includes('duplicate'));
      await waitFor(
        'both acknowledged',
        async () => (await unsettled(s)) + (await unsettled(s, 'other')) === 0,
      );
      await other.stop();
      await slow.stop();
      assert.equal(runs, 1);
    });

    it("keeps a run longer than the consumer's ack_wait from being redelivered (working())", async () => {
      const s = await newStream({ ack_wait: nanos(1_000) });
      const results: string[] = [];
      const c = await consumer(s, () => new Promise((resolve) => setTimeout(resolve, 2_500)), {
        onResult: (_m, r) => void results.push(r.outcome),
      });
      await publish(s, 'long', 'evt_long');
      await waitFor('the run', () => results.length >= 1);
      await waitFor('the ack', async () => (await unsettled(s)) === 0);
      await c.stop();
      assert.deepEqual(results, ['processed'], 'one delivery, no redelivery in flight');
      assert.equal((await jsm.consumers.info(s, 'work')).num_redelivered, 0);
    });

    it('stop() waits for the runs it started; their messages are acknowledged', async () => {
      const s = await newStream();
      let started = 0;
      let finished = 0;
      const c = await consumer(s, async () => {
        started++;
        await new Promise((resolve) => setTimeout(resolve, 300));
        finished++;
      });
      await publish(s, 'slow', 'evt_slow');
      await waitFor('the run to start', () => started === 1);
      await c.stop();
      assert.equal(finished, 1);
      await nc.flush();
      await waitFor('the ack', async () => (await unsettled(s)) === 0);
      assert.equal(await c.closed, undefined);
    });

    it('stop() hands the messages pulled ahead and not started back at once', async () => {
      const s = await newStream();
      let started = 0;
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const c = await consumer(
        s,
        () => {
          started++;
          return held;
        },
        { concurrency: 2 },
      );
      // Three messages, two running and one pulled ahead: every one delivered, none in flight from
      // the server when it stops (those would come back after ack_wait, as for any consume()).
      for (const id of ['a', 'b', 'c']) await publish(s, id, `evt_${id}`);
      await waitFor('two runs, one pulled ahead', async () => {
        const info = await jsm.consumers.info(s, 'work');
        return started === 2 && info.num_ack_pending === 3 && info.num_pending === 0;
      });
      const stopped = c.stop();
      release();
      await stopped;
      assert.equal(started, 2);
      // The next consumer gets it now, well before the consumer's ack_wait (30 s) would return it.
      const next = await consumer(s, () => void started++);
      await waitFor('the one not started, run by the next consumer', () => started === 3);
      await next.stop();
    });

    it('refuses a consumer whose acks or max_deliver would drop messages', async () => {
      const all = await newStream({ ack_policy: AckPolicy.All });
      await assert.rejects(
        consumer(all, () => {}),
        (e: unknown) => e instanceof ConfigError && /explicit/.test(e.message),
      );
      const capped = await newStream({ max_deliver: 5 });
      await assert.rejects(
        consumer(capped, () => {}, { maxAttempts: 5 }),
        /max_deliver 5/,
      );
      const c = await consumer(capped, () => {}, { maxAttempts: 4 });
      await c.stop();
    });
  });
}
