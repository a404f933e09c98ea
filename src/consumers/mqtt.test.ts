/**
 * onceonly/mqtt on a real Mosquitto (QoS 1, persistent sessions): acknowledged once processed, a
 * second copy acknowledged without a second run, a failure retried in process as the next attempt
 * while the message stays unacknowledged (the session resends it after a restart, flagged dup), the
 * last failure published to `<topic>/dead` with its reason, a dead letter nobody subscribes to kept
 * back until someone does, a message without an id dead-lettered untouched, a message in flight
 * elsewhere deferred, a dropped connection's message settled on the next one, stop().
 * "Acknowledged" is read from the broker: the session is reconnected and a marker published; what
 * the session resends before the marker is what was left unacknowledged.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import mqtt from 'mqtt';
import { reachable, servers } from '../../test/support/servers.js';
import { ConfigError } from '../errors.js';
import { once, type Store } from '../once.js';
import { memoryStore } from '../stores/memory.js';
import { consumeOnce, type MqttConsumerOptions, type MqttMessage, topicMatches } from './mqtt.js';
import type { ConsumerResult } from './settle.js';

const quiet = { logger: false as const };
const MARK = '--marker--';
const text = (payload: Uint8Array | string) => Buffer.from(payload).toString();
const sessionOptions = (clientId: string): mqtt.IClientOptions => ({
  protocolVersion: 5,
  clientId,
  clean: false,
  properties: { sessionExpiryInterval: 300, receiveMaximum: 8 },
  reconnectPeriod: 100,
});
const waitFor = async (what: string, ok: () => boolean | Promise<boolean>, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
};

if (
  await reachable('Mosquitto', servers.mqtt, async () =>
    (await mqtt.connectAsync(servers.mqtt, { reconnectPeriod: 0 })).endAsync(),
  )
) {
  describe('onceonly/mqtt on Mosquitto', () => {
    let pub: mqtt.MqttClient;
    const sessions: string[] = [];
    before(async () => {
      pub = await mqtt.connectAsync(servers.mqtt, { protocolVersion: 5 });
    });
    after(async () => {
      // Ends the sessions: a clean start with no expiry drops what they hold.
      for (const clientId of sessions) {
        const c = await mqtt.connectAsync(servers.mqtt, { protocolVersion: 5, clientId, clean: true });
        await c.endAsync();
      }
      await pub.endAsync();
    });

    const newTopic = () => `oo_mqtt/${randomBytes(4).toString('hex')}`;
    const newSession = () => {
      const id = `oo-mqtt-test-${randomBytes(4).toString('hex')}`;
      sessions.push(id);
      return id;
    };
    const publish = (topic: string, body: string, messageId?: string) =>
      pub.publishAsync(topic, body, {
        qos: 1,
        ...(messageId ? { properties: { userProperties: { 'message-id': messageId } } } : {}),
      });
    const consumer = async (
      topic: string,
      work: (m: MqttMessage, attempt: number) => unknown,
      options: MqttConsumerOptions & { store?: Store; clientId?: string } = {},
    ) => {
      const { store = memoryStore(), clientId = newSession(), ...rest } = options;
      const client = mqtt.connect(servers.mqtt, sessionOptions(clientId));
      const c = await consumeOnce(client, topic, store, (m, { attempt }) => work(m, attempt), {
        ...quiet,
        retryDelay: '100ms',
        ...rest,
      });
      return {
        client,
        clientId,
        stop: async () => {
          await c.stop();
          await client.endAsync();
        },
      };
    };
    /** What the session resends when it reconnects: the messages it holds unacknowledged. */
    const leftover = async (clientId: string, topic: string) => {
      const c = mqtt.connect(servers.mqtt, sessionOptions(clientId));
      const seen: string[] = [];
      let marked = false;
      c.on('message', (_t, payload, packet) => {
        if (text(payload) === MARK) marked = true;
        else seen.push(`${text(payload)}${packet.dup ? ' (dup)' : ''}`);
      });
      await new Promise((resolve) => c.once('connect', resolve));
      await publish(topic, MARK);
      await waitFor('the marker', () => marked);
      await c.endAsync();
      return seen;
    };
    /** A subscriber of the dead letters, with their reasons. */
    const deadLetters = async (topic: string) => {
      const c = await mqtt.connectAsync(servers.mqtt, { protocolVersion: 5 });
      const dead: Array<{ body: string; props: Record<string, unknown> }> = [];
      c.on('message', (_t, payload, packet) =>
        dead.push({ body: text(payload), props: { ...packet.properties?.userProperties } }),
      );
      await c.subscribeAsync(topic, { qos: 1 });
      return { dead, end: () => c.endAsync() };
    };

    it('acknowledges a processed message, and a copy of it without running it again', async () => {
      const topic = newTopic();
      const ran: string[] = [];
      const settled: string[] = [];
      const c = await consumer(topic, (m) => void ran.push(text(m.payload)), {
        lease: '1s', // the copy, run at once, is in flight until then
        onResult: (_m, r) => void (r.outcome !== 'in-flight' && settled.push(r.outcome)),
      });
      await publish(topic, 'one', 'evt_1');
      await publish(topic, 'one again', 'evt_1');
      await publish(topic, 'two', 'evt_2');
      await waitFor('three settled', () => settled.length >= 3);
      await c.stop();
      assert.deepEqual(ran, ['one', 'two']);
      assert.deepEqual(await leftover(c.clientId, topic), [], 'every message acknowledged');
    });

    it('keys on the correlation data when there is no message-id', async () => {
      const topic = newTopic();
      const store = memoryStore();
      let runs = 0;
      const c = await consumer(topic, () => void runs++, { store });
      await pub.publishAsync(topic, 'a', { qos: 1, properties: { correlationData: Buffer.from('req-7') } });
      await pub.publishAsync(topic, 'b', { qos: 1, properties: { correlationData: Buffer.from([0xff, 0]) } });
      await waitFor('two runs', () => runs >= 2);
      await c.stop();
      for (const id of ['req-7', '0xff00']) {
        const r = await once(store, `mqtt:${topic}:${id}`, () => {}, quiet);
        assert.equal(r.outcome, 'duplicate', `mqtt:${topic}:${id} is done`);
      }
    });

    it('retries a failure in process as its next attempt, then acknowledges it', async () => {
      const topic = newTopic();
      const attempts: number[] = [];
      const delays: number[] = [];
      const c = await consumer(
        topic,
        (_m, attempt) => {
          attempts.push(attempt);
          if (attempt < 3) throw new Error(`not yet (${attempt})`);
        },
        {
          retryDelay: (attempt) => {
            delays.push(attempt);
            return '50ms';
          },
        },
      );
      await publish(topic, 'flaky', 'evt_retry');
      await waitFor('the third attempt', () => attempts.length >= 3);
      await c.stop();
      assert.deepEqual(attempts, [1, 2, 3]);
      assert.deepEqual(delays, [1, 2], 'each retry waited the delay of the attempt that failed');
      assert.deepEqual(await leftover(c.clientId, topic), []);
    });

    it('keeps a message waiting for its retry unacknowledged: after a restart the session resends it, the next attempt', async () => {
      const topic = newTopic();
      const store = memoryStore();
      const attempts: Array<[number, boolean]> = [];
      const first = await consumer(
        topic,
        (m, attempt) => {
          attempts.push([attempt, m.dup]);
          throw new Error('later');
        },
        { store, retryDelay: '1h' },
      );
      await publish(topic, 'waits', 'evt_wait');
      await waitFor('the first attempt', () => attempts.length >= 1);
      await first.stop(); // does not wait the hour: the message stays with the session
      const second = await consumer(topic, (m, attempt) => void attempts.push([attempt, m.dup]), {
        store,
        clientId: first.clientId,
      });
      await waitFor('the second attempt', () => attempts.length >= 2);
      await second.stop();
      assert.deepEqual(attempts, [
        [1, false],
        [2, true],
      ]);
      assert.deepEqual(await leftover(first.clientId, topic), []);
    });

    it('dead-letters the last failure to <topic>/dead with its reason, and a message without an id untouched', async () => {
      const topic = newTopic();
      const sink = await deadLetters(`${topic}/dead`);
      let runs = 0;
      const c = await consumer(
        topic,
        () => {
          runs++;
          throw new Error('downstream <refused>');
        },
        { maxAttempts: 2 },
      );
      await publish(topic, 'poison', 'evt_poison');
      await publish(topic, 'anonymous');
      await waitFor('two dead letters', () => sink.dead.length >= 2);
      await c.stop();
      await sink.end();
      assert.equal(runs, 2, 'the poison message ran twice, the anonymous one never');
      const dead = Object.fromEntries(sink.dead.map((d) => [d.body, d.props]));
      assert.match(
        String(dead.poison?.['onceonly-reason']),
        /failed on attempt 2 of 2: Error: downstream <refused>/,
      );
      assert.equal(dead.poison?.['message-id'], 'evt_poison', 'its own properties kept');
      assert.equal(dead.poison?.['onceonly-topic'], topic);
      assert.match(String(dead.anonymous?.['onceonly-reason']), /no key: .*no message-id/);
      assert.deepEqual(await leftover(c.clientId, topic), []);
    });

    it('keeps a dead letter nobody subscribes to back (the broker would drop it), until someone does', async () => {
      const topic = newTopic();
      const warnings: string[] = [];
      const c = await consumer(
        topic,
        () => {
          throw new Error('no');
        },
        { maxAttempts: 1, logger: { warn: (m: string) => warnings.push(m), error: () => {} } },
      );
      await publish(topic, 'poison', 'evt_unheard');
      await waitFor('a dead letter refused', () => warnings.some((w) => w.includes('no subscriber')));
      const sink = await deadLetters(`${topic}/dead`);
      await waitFor('the dead letter', () => sink.dead.length >= 1);
      await c.stop();
      await sink.end();
      assert.deepEqual(
        sink.dead.map((d) => d.body),
        ['poison'],
      );
      assert.deepEqual(await leftover(c.clientId, topic), []);
    });

    it('defers a message in flight elsewhere, then acknowledges it as a duplicate', async () => {
      const topic = newTopic();
      const outcomes: string[] = [];
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let runs = 0;
      const c = await consumer(
        topic,
        async () => {
          runs++;
          await held;
        },
        {
          key: (m) => `same:${text(m.payload)}`,
          lease: '1s', // the copy is deferred until the lease's end, at most 5 s
          onResult: (_m, r: ConsumerResult) => void outcomes.push(r.outcome),
        },
      );
      await publish(topic, 'x');
      await publish(topic, 'x');
      await waitFor('the second copy deferred', () => outcomes.includes('in-flight'));
      release();
      await waitFor('the copy settled', () => outcomes.includes('duplicate'));
      await c.stop();
      assert.equal(runs, 1);
      assert.deepEqual(outcomes.filter((o) => o !== 'in-flight').sort(), ['duplicate', 'processed']);
      assert.deepEqual(await leftover(c.clientId, topic), []);
    });

    it('settles a message whose connection dropped mid-run on the next connection, run once', async () => {
      const topic = newTopic();
      const seen: Array<[string, boolean]> = [];
      let runs = 0;
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const c = await consumer(
        topic,
        async () => {
          runs++;
          await held;
        },
        { lease: '1s', onResult: (m, r) => void seen.push([r.outcome, m.dup]) },
      );
      await publish(topic, 'cut', 'evt_cut');
      await waitFor('the run', () => runs === 1);
      const dropped = c.client.stream;
      dropped.destroy(); // the broker sees the connection end; mqtt.js reconnects
      await waitFor('a new connection', () => c.client.connected && c.client.stream !== dropped);
      release();
      await waitFor('the resent copy settled', () => seen.some(([o]) => o === 'duplicate'));
      await c.stop();
      assert.equal(runs, 1);
      assert.deepEqual(
        seen.find(([o]) => o === 'processed'),
        ['processed', false],
      );
      assert.deepEqual(
        seen.find(([o]) => o === 'duplicate'),
        ['duplicate', true],
      );
      assert.deepEqual(await leftover(c.clientId, topic), []);
    });

    it('stop() waits for the runs it started; their messages are acknowledged', async () => {
      const topic = newTopic();
      let started = 0;
      let finished = 0;
      const c = await consumer(topic, async () => {
        started++;
        await new Promise((resolve) => setTimeout(resolve, 300));
        finished++;
      });
      await publish(topic, 'slow', 'evt_slow');
      await waitFor('the run to start', () => started === 1);
      await c.stop();
      assert.equal(finished, 1);
      assert.deepEqual(await leftover(c.clientId, topic), []);
    });

    it('runs at most receiveMaximum messages at once, even when the broker sends more', async () => {
      const topic = newTopic();
      let running = 0;
      let most = 0;
      let done = 0;
      const c = await consumer(topic, async () => {
        most = Math.max(most, ++running);
        await new Promise((resolve) => setTimeout(resolve, 20));
        running--;
        done++;
      });
      // Mosquitto 2.0 sends past a session's receive maximum: the unacknowledged ones it has sent.
      let sent = 0;
      c.client.on('packetreceive', (packet) => void (packet.cmd === 'publish' && sent++));
      let ahead = 0;
      const watch = setInterval(() => {
        ahead = Math.max(ahead, sent - done);
      }, 2);
      await Promise.all(Array.from({ length: 40 }, (_, i) => publish(topic, `m${i}`, `evt_many_${i}`)));
      await waitFor('40 runs', () => done === 40);
      clearInterval(watch);
      await c.stop();
      assert.ok(ahead > 8, `the broker had ${ahead} messages out at most (expected more than 8)`);
      assert.equal(most, 8, 'receiveMaximum (8) runs at once, no more');
      assert.deepEqual(await leftover(c.clientId, topic), []);
    });

    it('with MQTT 3.1.1 needs key: a message is dead-lettered untouched without one', async () => {
      const topic = newTopic();
      const sink = await deadLetters(`${topic}/dead`);
      const clientId = newSession();
      const client = mqtt.connect(servers.mqtt, { protocolVersion: 4, clientId, clean: false });
      let runs = 0;
      const c = await consumeOnce(client, topic, memoryStore(), () => void runs++, quiet);
      await publish(topic, 'v3', 'evt_v3');
      await waitFor('the dead letter', () => sink.dead.length >= 1);
      await c.stop();
      await client.endAsync();
      await sink.end();
      assert.equal(runs, 0);
      assert.equal(sink.dead[0]?.body, 'v3');
    });

    it("Mosquitto keeps a dead shared subscriber's unacknowledged messages for its own session (docs, chaos kit)", async () => {
      const topic = newTopic();
      const group = `$share/g${randomBytes(3).toString('hex')}/${topic}`;
      const join = async (clientId: string, ack: boolean, got: string[]) => {
        const c = mqtt.connect(servers.mqtt, { ...sessionOptions(clientId), reconnectPeriod: 0 });
        c.handleMessage = (packet, callback) => {
          got.push(`${text(packet.payload)}${packet.dup ? ' (dup)' : ''}`);
          // An error: mqtt.js goes on without a PUBACK.
          callback(ack ? undefined : new Error('held'));
        };
        await new Promise((resolve) => c.once('connect', resolve));
        await c.subscribeAsync(group, { qos: 1 });
        return c;
      };
      const [a, b] = [newSession(), newSession()];
      const heldByA: string[] = [];
      const gotByB: string[] = [];
      const dying = await join(a, false, heldByA);
      const living = await join(b, true, gotByB);
      for (const n of [1, 2, 3, 4]) await publish(topic, `m${n}`);
      await waitFor(
        'both to receive',
        () => heldByA.length > 0 && gotByB.length > 0 && heldByA.length + gotByB.length === 4,
      );
      const held = [...heldByA];
      dying.stream.destroy();
      await new Promise<void>((resolve) => dying.once('close', () => resolve()));
      for (const n of [5, 6, 7, 8]) await publish(topic, `m${n}`);
      await waitFor('the living subscriber to receive new ones', () => gotByB.some((m) => /m[5-8]/.test(m)));
      const back: string[] = [];
      const returned = await join(a, true, back);
      await waitFor('the held messages resent', () => held.every((m) => back.includes(`${m} (dup)`)));
      await living.endAsync();
      await returned.endAsync();
      assert.deepEqual(
        gotByB.filter((m) => held.includes(m)),
        [],
        "none of the dead subscriber's messages went to the living one",
      );
      assert.ok(
        back.some((m) => /m[5-8]$/.test(m)),
        'new messages were queued for the dead session too',
      );
    });

    it('refuses a client without a persistent session, or one already connected, or a filter its dead letters match', async () => {
      const store = memoryStore();
      const refuse = async (options: mqtt.IClientOptions, pattern: RegExp, topic = newTopic()) => {
        const client = mqtt.connect(servers.mqtt, { ...options, manualConnect: true });
        await assert.rejects(
          consumeOnce(client, topic, store, () => {}),
          (e: unknown) => {
            assert.ok(e instanceof ConfigError);
            assert.match(e.message, pattern);
            return true;
          },
        );
      };
      const id = `oo-mqtt-test-${randomBytes(4).toString('hex')}`;
      await refuse({ protocolVersion: 5, clientId: id }, /persistent session/);
      await refuse({ protocolVersion: 5, clientId: id, clean: false }, /persistent session/);
      await refuse(sessionOptions(id), /deadLetterTopic/, 'orders/#');
      const connected = await mqtt.connectAsync(servers.mqtt, sessionOptions(newSession()));
      await assert.rejects(
        consumeOnce(connected, newTopic(), store, () => {}),
        /before the MQTT client connects/,
      );
      await connected.endAsync();
    });
  });
}

describe('onceonly/mqtt topic filters', () => {
  it('matches + and #, a shared subscription by its filter, and no $ topic by a leading wildcard', () => {
    assert.ok(topicMatches('orders', 'orders'));
    assert.ok(!topicMatches('orders', 'orders/dead'));
    assert.ok(topicMatches('orders/+', 'orders/eu'));
    assert.ok(!topicMatches('orders/+', 'orders/eu/dead'));
    assert.ok(topicMatches('orders/#', 'orders'));
    assert.ok(topicMatches('orders/#', 'orders/eu/dead'));
    assert.ok(topicMatches('$share/g/orders/+', 'orders/eu'));
    assert.ok(!topicMatches('$share/g/orders', 'g/orders'));
    assert.ok(!topicMatches('#', '$SYS/broker'));
    assert.ok(!topicMatches('+/broker', '$SYS/broker'));
  });
});
