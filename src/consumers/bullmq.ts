/**
 * BullMQ workers: `new Worker(queue, onceProcessor(store, work), options)` runs `work` once per job
 * under `once()` and settles each job with BullMQ's own verbs. A processed or duplicate job
 * completes (the work's value is its return value). A failure waits in BullMQ's delayed set for
 * `retryDelay(attempt)` (`job.moveToDelayed`, the failure written to the job's log), and so does a
 * job another worker is running right now or whose claim the store could not answer. A job that
 * failed `maxAttempts` times (or was redelivered after as many runs that were killed) fails with
 * an `UnrecoverableError` carrying the reason: the failed set is BullMQ's dead letters.
 *
 * The retry is the adapter's, not the job's `attempts`/`backoff`, so it holds whatever options the
 * job was added with (BullMQ's default of one attempt would make a first failure final) and a
 * redelivery where nothing ran spends no attempt. BullMQ extends its own lock while the work runs;
 * a killed worker's job is found stalled after `stalledInterval` and run again. The BullMQ types
 * are written here, as far as the adapter uses them.
 */
import type { Store, WorkContext } from '../once.js';
import { type ConsumerOptions, consumerRunner, errorText } from './settle.js';

/** A BullMQ job, as the processor gets it (`Job` of bullmq). */
export interface BullJob {
  readonly id?: string | undefined;
  readonly queueName: string;
  /** Times the job was moved to active (this run included). */
  readonly attemptsStarted: number;
  /** Times BullMQ found the job stalled: a worker holding it died or stopped renewing its lock. */
  readonly stalledCounter?: number | undefined;
  moveToDelayed(timestamp: number, token?: string): Promise<void>;
  log?(row: string): Promise<number>;
}

export type BullConsumerOptions<J extends BullJob> = ConsumerOptions<J>;

/**
 * What the processor throws after moving its job to the delayed set: BullMQ (which knows these
 * errors by name) then leaves the job there and takes the next one.
 */
export class DelayedError extends Error {
  override readonly name = 'DelayedError';
}

/** What the processor throws to dead-letter its job: BullMQ fails it without another attempt. */
export class UnrecoverableError extends Error {
  override readonly name = 'UnrecoverableError';
}

/**
 * The processor of a BullMQ `Worker` that runs `work` once per job (`once()` under
 * `bullmq:<queue>:<job.id>` by default: add jobs with a `jobId` of your event's id, or give `key`).
 * The worker's `concurrency` is how many jobs run at once; `worker.close()` waits for them.
 *
 * @example
 * const worker = new Worker('orders', onceProcessor(store, async (job, { attempt, signal }) => {
 *   await ship(job.data, { attempt, signal });
 * }, { timeout: '20s', maxAttempts: 5 }), { connection, concurrency: 16, maxStalledCount: 5 });
 */
export function onceProcessor<J extends BullJob, R>(
  store: Store,
  work: (job: J, ctx: WorkContext) => R | Promise<R>,
  options: BullConsumerOptions<J> = {},
): (job: J, token?: string) => Promise<Awaited<R> | undefined> {
  const run = consumerRunner(store, work, options, (job) => {
    if (typeof job.id !== 'string' || job.id === '') throw new TypeError('the job has no id');
    return `bullmq:${job.queueName}:${job.id}`;
  });
  return async (job, token): Promise<Awaited<R> | undefined> => {
    // A redelivery is a job one of whose runs was lost to a crash (BullMQ found it stalled). A job
    // retried from the failed set after a fix is a first delivery again: it runs once more.
    const first = job.attemptsStarted <= 1 || !job.stalledCounter;
    const { verdict, result } = await run(job, { first });
    switch (verdict.action) {
      case 'ack':
        return result.outcome === 'processed' || result.outcome === 'lease-lost'
          ? (result.value as Awaited<R>)
          : undefined;
      case 'dead':
        throw new UnrecoverableError(verdict.reason);
      case 'retry':
        if (result.outcome === 'failed')
          await job
            .log?.(
              `onceonly: attempt ${result.attempt} failed, retried in ${verdict.delayMs} ms: ${errorText(result.error)}`,
            )
            .catch(() => {});
        // Should this throw (the lock was lost, Redis is gone), BullMQ finds the job stalled and runs
        // it again, or fails the run with this error (retried if the job has attempts left, else in
        // the failed set): never lost, and once() answers for what already ran.
        await job.moveToDelayed(Date.now() + verdict.delayMs, token);
        throw new DelayedError(`onceonly: ${result.outcome}, retried in ${verdict.delayMs} ms`);
    }
  };
}
