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
    ) => {
      const own = await connection.createConfirmChannel();
      await own.prefetch(4);
      const c = await consumeOnce(own, q, memoryStore(), (m, { attempt }) => work(m, attempt), {
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
