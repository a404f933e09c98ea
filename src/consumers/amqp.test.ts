/**
 * onceonly/amqp on a real RabbitMQ: acknowledged once processed, a published copy acknowledged
 * without a second run, a failure retried through the delay queue as the next attempt, the last
 * failure in `<queue>.dead` with its reason (or the queue's own dead-letter exchange), a message
 * without an id dead-lettered untouched, stop() waiting for the runs it started.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import amqp from 'amqplib';
import { reachable, servers } from '../../test/support/servers.js';
import type { Store } from '../core/types.js';
import { memoryStore } from '../stores/memory.js';
import {
  type AmqpConsumerOptions,
  type AmqpMessage,
  consumeOnce,
  RETRY_STEPS_MS,
  retryStep,
} from './amqp.js';

const quiet = { logger: false as const };

if (await reachable('RabbitMQ', servers.amqp, async () => (await amqp.connect(servers.amqp)).close())) {
  describe('onceonly/amqp on RabbitMQ', () => {
    let connection: amqp.ChannelModel;
    let channel: amqp.ConfirmChannel;
    const queues: string[] = [];
    before(async () => {
      connection = await amqp.connect(servers.amqp);
      channel = await connection.createConfirmChannel();
    });
    after(async () => {
      for (const q of queues)
        for (const name of [q, `${q}.dead`, `${q}.dlx`, ...RETRY_STEPS_MS.map((ms) => `${q}.retry.${ms}`)])
          await channel.deleteQueue(name).catch(() => {});
      await connection.close();
    });

    const newQueue = async (args?: Record<string, unknown>) => {
      const q = `oo_amqp_${randomBytes(4).toString('hex')}`;
      queues.push(q);
      await channel.assertQueue(q, { durable: true, ...(args ? { arguments: args } : {}) });
      return q;
    };
    const publish = async (q: string, body: string, messageId?: string) => {
      channel.sendToQueue(q, Buffer.from(body), { persistent: true, ...(messageId ? { messageId } : {}) });
      await channel.waitForConfirms();
    };
    const waitFor = async (what: string, ok: () => boolean | Promise<boolean>, ms = 10_000) => {
      const end = Date.now() + ms;
      while (!(await ok())) {
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const depth = async (q: string) => (await channel.checkQueue(q)).messageCount;
    const consumer = async (
      q: string,
      work: (m: AmqpMessage, attempt: number) => unknown,
      options: AmqpConsumerOptions = {},
      store: Store = memoryStore(),
    ) => {
      const own = await connection.createConfirmChannel();
      await own.prefetch(4);
      const c = await consumeOnce(own, q, store, (m, { attempt }) => work(m, attempt), {
        ...quiet,
        retryDelay: '100ms',
        ...options,
      });
      return {
        stop: async () => {
          await c.stop();
          await own.close();
        },
      };
    };

    it('acknowledges a processed message, and a copy of it without running it again', async () => {
      const q = await newQueue();
      const ran: string[] = [];
      const c = await consumer(q, (m) => void ran.push(m.content.toString()));
      await publish(q, 'one', 'evt_1');
      await publish(q, 'one again', 'evt_1');
      await publish(q, 'two', 'evt_2');
      await waitFor('two runs', () => ran.length >= 2);
      await new Promise((resolve) => setTimeout(resolve, 200));
      await c.stop();
      assert.deepEqual(ran, ['one', 'two']);
      assert.equal(await depth(q), 0, 'every message acknowledged');
    });

    it('retries a failure through the delay queue as its next attempt, then acknowledges it', async () => {
      const q = await newQueue();
      const attempts: number[] = [];
      const c = await consumer(q, (_m, attempt) => {
        attempts.push(attempt);
        if (attempt < 3) throw new Error(`not yet (${attempt})`);
      });
      await publish(q, '{}', 'evt_retry');
      await waitFor('the third attempt', () => attempts.length >= 3);
      await c.stop();
      assert.deepEqual(attempts, [1, 2, 3]);
      assert.equal(await depth(q), 0);
      assert.equal(await depth(`${q}.retry.100`), 0, 'the delay queue it waited in is empty');
    });

    it('dead-letters the last failure to <queue>.dead with its reason, and a message without an id untouched', async () => {
      const q = await newQueue();
      let runs = 0;
      const c = await consumer(
        q,
        () => {
          runs++;
          throw new Error('downstream <refused>');
        },
        { maxAttempts: 2 },
      );
      // The dead-letter queue as the adapter declares it, so the test may read its depth before then.
      await channel.assertQueue(`${q}.dead`, { durable: true });
      await publish(q, 'poison', 'evt_poison');
      await publish(q, 'anonymous');
      await waitFor('two dead letters', async () => (await depth(`${q}.dead`)) >= 2);
      await c.stop();
      assert.equal(runs, 2, 'the poison message ran twice, the anonymous one never');
      assert.equal(await depth(q), 0);
      const dead: Record<string, string> = {};
      for (let m = await channel.get(`${q}.dead`); m; m = await channel.get(`${q}.dead`)) {
        dead[m.content.toString()] = String(m.properties.headers?.['x-onceonly-reason']);
        channel.ack(m);
      }
      assert.match(dead.poison ?? '', /failed on attempt 2 of 2: Error: downstream <refused>/);
      assert.equal(await channel.checkQueue(`${q}.dead`).then((r) => r.messageCount), 0);
      assert.match(dead.anonymous ?? '', /no key: .*no messageId/);
    });

    it("with deadLetter: 'dlx', rejects the last failure to the queue's own dead-letter exchange", async () => {
      const base = `oo_amqp_${randomBytes(4).toString('hex')}`;
      queues.push(base);
      await channel.assertQueue(`${base}.dlx`, { durable: true });
      await channel.assertQueue(base, {
        durable: true,
        arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': `${base}.dlx` },
      });
      const c = await consumer(
        base,
        () => {
          throw new Error('no');
        },
        { maxAttempts: 1, deadLetter: 'dlx' },
      );
      await publish(base, 'poison', 'evt_dlx');
      await waitFor('the dead letter', async () => (await depth(`${base}.dlx`)) >= 1);
      await c.stop();
      assert.equal(await depth(base), 0);
    });

    it('dead-letters a retry copy of a message whose runs were all killed, without running it; the re-driven original runs', async () => {
      const q = await newQueue();
      await channel.assertQueue(`${q}.dead`, { durable: true });
      const store = memoryStore();
      // Prepare: four runs of the key that were killed (claimed, never confirmed: their leases ran
      // out), twice maxAttempts.
      for (let i = 0; i < 4; i++) {
        assert.equal(
          (await store.claim(`amqp:${q}:evt_killer`, { leaseMs: 20, retentionMs: 60_000 })).status,
          'acquired',
        );
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
      const ran: number[] = [];
      const c = await consumer(q, (_m, attempt) => void ran.push(attempt), { maxAttempts: 2 }, store);
      // Act: the adapter's own retry copy comes back (marked), then the message re-driven by hand.
      channel.sendToQueue(q, Buffer.from('killer'), {
        messageId: 'evt_killer',
        headers: { 'x-onceonly-copy': 1 },
      });
      await channel.waitForConfirms();
      await waitFor('the dead letter', async () => (await depth(`${q}.dead`)) >= 1);
      await publish(q, 'killer', 'evt_killer');
      await waitFor('the re-driven run', () => ran.length >= 1);
      await c.stop();
      // Assess
      assert.deepEqual(
        ran,
        [6],
        'only the re-driven message ran (attempt 5 was the copy, dead-lettered unrun)',
      );
      const dead = await channel.get(`${q}.dead`);
      assert.ok(dead);
      assert.match(String(dead.properties.headers?.['x-onceonly-reason']), /never ended/);
      assert.equal(
        dead.properties.headers?.['x-onceonly-copy'],
        undefined,
        'a dead copy carries no retry mark',
      );
      channel.ack(dead);
    });

    it('re-declares a delay queue an operator deleted, and copies no CC header', async () => {
      const q = await newQueue();
      const cc = await newQueue();
      const attempts: Record<string, number[]> = {};
      const c = await consumer(q, (m, attempt) => {
        const id = String(m.properties.messageId);
        attempts[id] = [...(attempts[id] ?? []), attempt];
        if (attempt < 2) throw new Error('not yet');
      });
      channel.sendToQueue(q, Buffer.from('one'), { messageId: 'evt_1', headers: { CC: [cc] } });
      await channel.waitForConfirms();
      await waitFor('the first message retried', () => (attempts.evt_1?.length ?? 0) >= 2);
      // Act: the delay queue, now empty, is deleted; another message fails once.
      await waitFor('the delay queue empty', async () => (await depth(`${q}.retry.100`)) === 0);
      await channel.deleteQueue(`${q}.retry.100`);
      await publish(q, 'two', 'evt_2');
      await waitFor('the second message retried', () => (attempts.evt_2?.length ?? 0) >= 2, 5_000);
      await c.stop();
      // Assess: both ran twice; the CC queue got the one message published, never its retry copy.
      assert.deepEqual(attempts, { evt_1: [1, 2], evt_2: [1, 2] });
      assert.equal(await depth(cc), 1);
    });

    it('refuses a channel that cannot confirm its copies', async () => {
      const plain = await connection.createChannel();
      await assert.rejects(
        consumeOnce(plain as never, 'any', memoryStore(), () => {}),
        /createConfirmChannel/,
      );
      await plain.close();
    });

    it('stop() waits for the runs it started; their messages are acknowledged', async () => {
      const q = await newQueue();
      let finished = 0;
      const c = await consumer(q, () => new Promise((resolve) => setTimeout(() => resolve(finished++), 300)));
      await publish(q, 'slow', 'evt_slow');
      await waitFor('the run to start', async () => (await depth(q)) === 0);
      await c.stop();
      assert.equal(finished, 1);
      assert.equal(await depth(q), 0);
    });
  });
}

describe('onceonly/amqp retry steps', () => {
  it('rounds a delay up to a step, the longest past the last', () => {
    assert.equal(retryStep(0), 100);
    assert.equal(retryStep(100), 100);
    assert.equal(retryStep(101), 250);
    assert.equal(retryStep(1_700), 2_000);
    assert.equal(retryStep(270_000), 300_000);
    assert.equal(retryStep(10 * 3_600_000), 3_600_000);
  });
});
