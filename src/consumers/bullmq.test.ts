/**
 * onceonly/bullmq on a real Redis: a processed job completes with the work's value, a copy of it
 * completes without a second run; a failure waits in the delayed set and runs as the next attempt
 * (whatever the job's own `attempts`), its failure in the job's log; the last failure in the failed
 * set with its reason (the job's attempts left unused), a job without a key failed untouched; a job
 * another worker runs deferred until it ends as a duplicate; a dead letter retried after a fix runs
 * once more; `worker.close()` waiting for the run it started.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type Job, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { reachable, servers } from '../../test/support/servers.js';
import type { Store } from '../once.js';
import { memoryStore } from '../stores/memory.js';
import { type BullConsumerOptions, onceProcessor } from './bullmq.js';

const quiet = { logger: false as const };
const { hostname, port } = new URL(servers.redis);
const connection = { host: hostname, port: Number(port || 6379), maxRetriesPerRequest: null };

type Data = { body: string; event?: string };

if (await reachable('Redis (BullMQ)', servers.redis, async () => new Redis(servers.redis).quit())) {
  describe('onceonly/bullmq on Redis', () => {
    const prefix = `oo_bull_${randomBytes(4).toString('hex')}`;
    const queues: Queue<Data>[] = [];
    let redis: Redis;
    before(() => {
      redis = new Redis(servers.redis);
    });
    after(async () => {
      for (const q of queues) await q.close();
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(keys);
      await redis.quit();
    });

    const newQueue = () => {
      const q = new Queue<Data>(`q_${randomBytes(3).toString('hex')}`, { connection, prefix });
      queues.push(q);
      return q;
    };
    const waitFor = async (what: string, ok: () => boolean | Promise<boolean>, ms = 10_000) => {
      const end = Date.now() + ms;
      while (!(await ok())) {
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    const stateOf = async (q: Queue<Data>, id: string) => (await q.getJob(id))?.getState();
    const worker = (
      q: Queue<Data>,
      work: (job: Job<Data>, attempt: number) => unknown,
      options: BullConsumerOptions<Job<Data>> = {},
      store: Store = memoryStore(),
    ) => {
      const w = new Worker<Data>(
        q.name,
        onceProcessor(store, (job, { attempt }) => work(job, attempt), {
          ...quiet,
          retryDelay: '100ms',
          ...options,
        }),
        { connection, prefix, concurrency: 4 },
      );
      w.on('error', () => {});
      return w;
    };

    it('completes a processed job with its value, and a copy of it without running it again', async () => {
      const q = newQueue();
      const ran: string[] = [];
      const w = worker(q, (job) => {
        ran.push(job.data.body);
        return `shipped ${job.data.body}`;
      });
      await q.add('order', { body: 'one' }, { jobId: 'evt_1', removeOnComplete: true });
      await waitFor('the first run', () => ran.length === 1);
      await waitFor('its removal', async () => (await q.getJob('evt_1')) === undefined);
      // The same job id added again once BullMQ forgot it (its own dedup holds only while it keeps it).
      await q.add('order', { body: 'one again' }, { jobId: 'evt_1' });
      await q.add('order', { body: 'two' }, { jobId: 'evt_2' });
      await waitFor('both completed', async () => (await q.getJobCounts('completed')).completed === 2);
      await w.close();
      assert.deepEqual(ran, ['one', 'two']);
      assert.equal((await q.getJob('evt_2'))?.returnvalue, 'shipped two');
      assert.equal((await q.getJob('evt_1'))?.returnvalue, null, 'the copy completed without a value');
    });

    it('retries a failure through the delayed set as its next attempt, whatever the job attempts', async () => {
      const q = newQueue();
      const attempts: number[] = [];
      const w = worker(q, (_job, attempt) => {
        attempts.push(attempt);
        if (attempt < 3) throw new Error(`not yet (${attempt})`);
      });
      // BullMQ's default of one attempt: its own retry would fail the job on the first throw.
      await q.add('order', { body: '{}' }, { jobId: 'evt_retry' });
      await waitFor('completed', async () => (await stateOf(q, 'evt_retry')) === 'completed');
      await w.close();
      assert.deepEqual(attempts, [1, 2, 3]);
      const job = (await q.getJob('evt_retry'))!;
      assert.equal(job.attemptsStarted, 3);
      const { logs } = await q.getJobLogs('evt_retry');
      assert.equal(logs.length, 2);
      assert.match(logs[0]!, /attempt 1 failed, retried in 100 ms: Error: not yet \(1\)/);
    });

    it('fails the last failure with its reason, and a job without a key untouched', async () => {
      const q = newQueue();
      let runs = 0;
      const w = worker(
        q,
        () => {
          runs++;
          throw new Error('downstream <refused>');
        },
        {
          maxAttempts: 2,
          key: (job) => {
            if (!job.data.event) throw new TypeError('no event id in the data');
            return `orders:${job.data.event}`;
          },
        },
      );
      // Attempts left to BullMQ on both: the dead letter must not be retried by BullMQ all the same.
      await q.add('order', { body: 'poison', event: 'evt_poison' }, { jobId: 'poison', attempts: 10 });
      await q.add('order', { body: 'anonymous' }, { jobId: 'anonymous', attempts: 10 });
      await waitFor('two failed', async () => (await q.getJobCounts('failed')).failed === 2);
      await w.close();
      assert.equal(runs, 2, 'the poison job ran twice, the anonymous one never');
      const poison = (await q.getJob('poison'))!;
      assert.match(poison.failedReason, /failed on attempt 2 of 2: Error: downstream <refused>/);
      assert.equal(poison.attemptsMade, 1, 'failed once in BullMQ, its attempts unused');
      assert.match((await q.getJob('anonymous'))!.failedReason, /no key: TypeError: no event id/);
    });

    it('runs a dead letter once more when it is retried from the failed set after a fix', async () => {
      const q = newQueue();
      let fixed = false;
      const attempts: number[] = [];
      const w = worker(
        q,
        (_job, attempt) => {
          attempts.push(attempt);
          if (!fixed) throw new Error('bug');
        },
        { maxAttempts: 2 },
      );
      await q.add('order', { body: '{}' }, { jobId: 'evt_redrive' });
      await waitFor('failed', async () => (await stateOf(q, 'evt_redrive')) === 'failed');
      fixed = true;
      // As a dashboard's retry button does: the counters kept.
      await (await q.getJob('evt_redrive'))!.retry('failed');
      await waitFor('completed', async () => (await stateOf(q, 'evt_redrive')) === 'completed');
      await w.close();
      assert.deepEqual(attempts, [1, 2, 3]);
    });

    it('defers a job whose key another worker is running, until it ends as a duplicate', async () => {
      const q = newQueue();
      const store = memoryStore();
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const ran: string[] = [];
      // A short lease: the copy is deferred for about as long.
      const byEvent = { key: (job: Job<Data>) => `orders:${job.data.event}`, lease: '1s' as const };
      const w1 = worker(
        q,
        async (job) => {
          ran.push(job.data.body);
          await held;
        },
        byEvent,
        store,
      );
      await q.add('order', { body: 'first', event: 'evt_same' }, { jobId: 'first' });
      await waitFor('the first run', () => ran.length === 1);
      await q.add('order', { body: 'copy', event: 'evt_same' }, { jobId: 'copy' });
      await waitFor('the copy deferred', async () => (await stateOf(q, 'copy')) === 'delayed');
      release();
      await waitFor('both completed', async () => (await q.getJobCounts('completed')).completed === 2);
      await w1.close();
      assert.deepEqual(ran, ['first']);
    });

    it('close() waits for the run it started; its job completes', async () => {
      const q = newQueue();
      let finished = 0;
      const w = worker(q, () => new Promise((resolve) => setTimeout(() => resolve(finished++), 300)));
      await q.add('order', { body: 'slow' }, { jobId: 'evt_slow' });
      await waitFor('the run to start', async () => (await stateOf(q, 'evt_slow')) === 'active');
      await w.close();
      assert.equal(finished, 1);
      assert.equal(await stateOf(q, 'evt_slow'), 'completed');
    });
  });
}
