/**
 * Inbox mode for the receiver: a verified delivery is written durably under its dedup key in one
 * atomic step and answered 2xx at once (`accepted`); workers then run it under fenced leases, retry
 * it with backoff when it fails, and bury it (dead, kept, visible) after too many attempts or too
 * long. Hybrid mode runs the handler inline first within a short budget and hands the entry over
 * past it, still running under its lease.
 */

import { type Duration, parsePositiveDuration } from '../core/duration.js';
import { type EngineResult, type LeaseOps, runLeased, type WorkContext } from '../core/engine.js';
import type { InboxJob, InboxStore } from '../core/inbox.js';
import { causeOf } from '../core/logger.js';
import type { TelemetryRun } from '../core/telemetry.js';
import { later, leaseNow, sleep, withDeadline } from '../core/timers.js';
import type { Lease } from '../core/types.js';
import { ConfigError } from '../errors.js';

/**
 * Inbox mode's policies. `inbox: true` takes every default.
 * @example inbox: { inline: '2s', maxAttempts: 8, maxAge: '3d', dropBody: true }
 */
export interface InboxOptions {
  /**
   * Hybrid: run the handler inline first, within this budget. Done in time answers `processed` as
   * inline mode does; failed, or still running at the budget, hands the entry to the inbox (the
   * running handler keeps its lease) and answers `accepted`. Without it every delivery is only
   * accepted, and workers run it.
   * @default undefined (accept only)
   * @example inline: '2s'
   */
  inline?: Duration;
  /**
   * Runs of one entry before it is dead (kept, not retried; `onceonly inbox retry` requeues it).
   * @default 10
   */
  maxAttempts?: number;
  /**
   * Age (since it was accepted) after which a failing entry is dead rather than retried.
   * @default '7d'
   */
  maxAge?: Duration;
  /**
   * The wait before the n-th retry: `initial × 2^(n-1)`, capped at `max`, with full jitter (a random
   * wait between half and all of it), so failing entries do not retry in step.
   * @default { initial: '5s', max: '1h' }
   */
  backoff?: { initial?: Duration; max?: Duration } | ((attempt: number) => number);
  /**
   * Drop the body (and headers) of an entry once it completes: bodies can hold personal data.
   * Completed entries still dedup redeliveries for the retention.
   * @default false
   */
  dropBody?: boolean;
  /**
   * The status of an `accepted` answer.
   * @default 202
   */
  acceptedStatus?: 200 | 202;
}

/** The inbox policies with their defaults, checked once at construction. */
export interface InboxPolicy {
  readonly inlineMs: number | undefined;
  readonly maxAttempts: number;
  readonly maxAgeMs: number;
  readonly backoff: (attempt: number) => number;
  readonly dropBody: boolean;
  readonly acceptedStatus: 200 | 202;
}

export function inboxPolicy(option: boolean | InboxOptions | undefined): InboxPolicy | undefined {
  if (option === undefined || option === false) return undefined;
  const o: InboxOptions = option === true ? {} : option;
  const maxAttempts = o.maxAttempts ?? 10;
  if (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: inbox maxAttempts must be a positive integer, got ${maxAttempts}`,
    );
  }
  let backoff: (attempt: number) => number;
  if (typeof o.backoff === 'function') {
    const custom = o.backoff;
    backoff = (attempt) => {
      const ms = Number(custom(attempt));
      return Number.isFinite(ms) && ms >= 0 ? ms : 0;
    };
  } else {
    const initial = parsePositiveDuration(o.backoff?.initial ?? '5s', 'inbox backoff.initial');
    const max = parsePositiveDuration(o.backoff?.max ?? '1h', 'inbox backoff.max');
    backoff = (attempt) => {
      const full = Math.min(max, initial * 2 ** Math.min(60, Math.max(0, attempt - 1)));
      return Math.round(full / 2 + Math.random() * (full / 2));
    };
  }
  const status = o.acceptedStatus ?? 202;
  if (status !== 200 && status !== 202) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: inbox acceptedStatus must be 200 or 202, got ${String(status)}`,
    );
  }
  return {
    inlineMs: o.inline === undefined ? undefined : parsePositiveDuration(o.inline, 'inbox inline'),
    maxAttempts,
    maxAgeMs: parsePositiveDuration(o.maxAge ?? '7d', 'inbox maxAge'),
    backoff,
    dropBody: o.dropBody === true,
    acceptedStatus: status,
  };
}

/** A run of one entry ended: what happened to it in the inbox. */
export type InboxRunEnd =
  | { readonly state: 'completed' }
  | { readonly state: 'pending'; readonly nextAttemptAt: Date }
  | { readonly state: 'dead' }
  | { readonly state: 'lost' };

/**
 * The lease operations of one inbox entry: extend, complete on success, and on failure a retry
 * after the backoff, or burial once the attempts or the age are spent. `decided` tells what the
 * failure led to.
 */
export function entryOps(
  inbox: InboxStore,
  policy: InboxPolicy,
  retentionMs: number,
  acceptedAt: Date,
): LeaseOps & { decided: InboxRunEnd | undefined } {
  const ops = {
    decided: undefined as InboxRunEnd | undefined,
    steps: inbox.steps,
    extend: (lease: Lease, leaseMs: number) => inbox.extend(lease, { leaseMs }),
    settle: async (lease: Lease) => {
      const done = await inbox.complete(lease, { retentionMs, dropBody: policy.dropBody });
      ops.decided = done ? { state: 'completed' } : { state: 'lost' };
      return done;
    },
    giveUp: async (lease: Lease, error: unknown) => {
      const line = causeOf(error);
      const tooOld = Date.now() - acceptedAt.getTime() >= policy.maxAgeMs;
      if (lease.attempt >= policy.maxAttempts || tooOld) {
        const buried = await inbox.bury(lease, {
          error: `${line} (attempt ${lease.attempt}${tooOld ? ', past maxAge' : ''})`,
        });
        ops.decided = buried ? { state: 'dead' } : { state: 'lost' };
        return buried;
      }
      const delayMs = policy.backoff(lease.attempt);
      const retried = await inbox.retry(lease, { delayMs, error: `${line} (attempt ${lease.attempt})` });
      ops.decided = retried
        ? { state: 'pending', nextAttemptAt: new Date(Date.now() + delayMs) }
        : { state: 'lost' };
      return retried;
    },
  };
  return ops;
}

export interface WorkerOptions {
  /**
   * Entries run at once by this worker.
   * @default 4
   */
  concurrency?: number;
  /**
   * How often an idle worker looks for due entries. A delivery accepted in this process wakes it
   * at once, and so does one accepted in another process where the store can tell (PostgreSQL
   * LISTEN/NOTIFY, Redis pub/sub: `inbox.watch`); the poll is what remains when it cannot.
   * @default '1s'
   */
  pollInterval?: Duration;
}

/** A running worker. */
export interface InboxWorker {
  /** Stops taking entries and waits for the running ones to end (each within its deadline). */
  stop(): Promise<void>;
  /** Entries run so far by this worker. */
  readonly runs: number;
}

/** What the worker loop needs from the receiver. */
export interface WorkerHost {
  readonly inbox: InboxStore;
  readonly space: string;
  readonly leaseMs: number;
  readonly storeTimeoutMs: number;
  /**
   * Runs one taken entry to its end (re-verify, handler under the lease, complete/retry/bury);
   * `takenAt` is when the take was sent, on `leaseNow()`'s clock: the lease's conservative start.
   */
  run(job: InboxJob, takenAt: number): Promise<unknown>;
  /**
   * A store error while taking: reported, then the loop waits a poll interval. A failure of the
   * store's watch (`inbox.watch`) is reported here too: the loop polls meanwhile.
   */
  takeFailed(error: unknown): void;
}

/**
 * One take within the store deadline. A take that lands after it has leased its entries to nobody:
 * they are handed back at once (due now, no attempt spent on them by this process), instead of
 * sitting out their lease and then counting as taken over, which on an entry's last attempt would
 * bury it without its handler ever running.
 */
export function takeDue(
  host: Pick<WorkerHost, 'inbox' | 'space' | 'leaseMs' | 'storeTimeoutMs'>,
  limit: number,
): Promise<InboxJob[]> {
  let taking: Promise<InboxJob[]> | undefined;
  return withDeadline('take', host.storeTimeoutMs, () => {
    taking = host.inbox.take({ limit, leaseMs: host.leaseMs, receiver: host.space });
    return taking;
  }).catch((error: unknown) => {
    taking
      ?.then(
        (late) =>
          Promise.all(
            late.map((job) =>
              host.inbox
                .retry(job.lease, { delayMs: 0, error: 'taken after storeTimeout' })
                .catch(() => false),
            ),
          ),
        () => undefined,
      )
      .catch(() => undefined);
    throw error;
  });
}

/**
 * Worker loops of one receiver in this process, woken when a delivery is accepted here, or where
 * the store watches ({@link InboxStore.watch}) when one may have become due in another process.
 */
export function startWorkerLoop(
  host: WorkerHost,
  options: WorkerOptions,
  wakers: Set<() => void>,
): InboxWorker {
  const concurrency = options.concurrency ?? 4;
  if (!Number.isSafeInteger(concurrency) || concurrency < 1) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: worker concurrency must be a positive integer, got ${concurrency}`,
    );
  }
  const pollMs = parsePositiveDuration(options.pollInterval ?? '1s', 'worker pollInterval');
  let stopping = false;
  let runs = 0;
  const running = new Set<Promise<unknown>>();
  let wake: (() => void) | undefined;
  // Woken since the last take began: a wake that lands while a take runs (which may not have seen
  // its entry) takes once more at once; any number of wakes meanwhile make that one take.
  let woken = false;
  const waker = () => {
    woken = true;
    wake?.();
  };
  wakers.add(waker);
  const unwatch = host.inbox.watch?.(host.space, { due: waker, failed: (error) => host.takeFailed(error) });

  // Waits a poll interval, ended early by a wake (a delivery may be due) unless `backOff` (after a
  // failed take: a store that fails while its notifications still arrive is not asked again at each
  // one); stop() always ends it.
  let halt: (() => void) | undefined;
  const idle = (ms: number, backOff = false) =>
    new Promise<void>((resolve) => {
      if ((woken && !backOff) || stopping) return resolve();
      const timer = later(() => done(), ms, { unref: true });
      const done = () => {
        timer.cancel();
        wake = undefined;
        halt = undefined;
        resolve();
      };
      halt = done;
      if (!backOff) wake = done;
    });

  const loop = (async () => {
    while (!stopping) {
      const free = concurrency - running.size;
      if (free <= 0) {
        await Promise.race(running);
        continue;
      }
      let jobs: InboxJob[];
      const takenAt = leaseNow();
      woken = false;
      try {
        jobs = await takeDue(host, free);
      } catch (error) {
        host.takeFailed(error);
        await idle(pollMs, true);
        continue;
      }
      for (const job of jobs) {
        runs++;
        const run = host.run(job, takenAt).catch(() => {});
        running.add(run);
        run.finally(() => running.delete(run));
      }
      // Idle only when nothing was due: a short take (entries arriving as fast as they are run, or
      // accepted in another process on a store with no watch) is followed by another at once, so
      // a busy worker never sleeps out a poll interval; an empty inbox still costs one take a poll.
      if (jobs.length === 0 && !stopping) await idle(pollMs);
    }
  })();

  return {
    get runs() {
      return runs;
    },
    async stop() {
      stopping = true;
      halt?.();
      wakers.delete(waker);
      unwatch?.();
      await loop;
      await Promise.allSettled([...running]);
    },
  };
}

/** Runs `work` under an entry's lease; resolves with the engine's result and what the inbox did. */
export async function runEntry<T>(
  inbox: InboxStore,
  lease: Lease,
  sentAt: number,
  acceptedAt: Date,
  work: (ctx: WorkContext) => T | Promise<T>,
  options: {
    policy: InboxPolicy;
    retentionMs: number;
    leaseMs: number;
    timeoutMs: number;
    storeTimeoutMs: number;
    telemetry?: TelemetryRun | undefined;
  },
): Promise<{ result: EngineResult<T>; end: InboxRunEnd | undefined }> {
  const ops = entryOps(inbox, options.policy, options.retentionMs, acceptedAt);
  const result = await runLeased(lease, sentAt, work, ops, options);
  return { result, end: ops.decided };
}

export { sleep };
