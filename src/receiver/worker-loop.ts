/**
 * A receiver's workers in this process: a loop that takes due entries ahead of its free slots and
 * runs each under its own fenced lease.
 *
 * Where a worker's time goes is round trips: a take, the handler, a complete per entry. So a slot
 * never waits on either. The loop keeps a few taken entries ready (at most `concurrency`), taking
 * again as they go (one take out at a time, its batch what was used up meanwhile), not one take
 * per freed slot. A slot frees when its handler ends, its complete (or retry, or burial) still in
 * flight: handlers and completes in flight are at most twice `concurrency` together (the completes
 * go to the store together where it can: complete-batch.ts). A ready entry's lease runs from its
 * take: one that waited past a sixth of it is extended before it runs (so the run's heartbeats keep
 * their margin), and the entries still ready at `stop()` are handed back, due at once, never run.
 */
import { type Duration, parsePositiveDuration } from '../core/duration.js';
import type { InboxJob, InboxStore } from '../core/inbox.js';
import { later, leaseNow, withDeadline } from '../core/timers.js';
import { ConfigError } from '../errors.js';

export interface WorkerOptions {
  /**
   * Entries run at once by this worker. It also holds up to as many again taken ahead, ready for a
   * slot that frees.
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
  /**
   * Stops taking entries, hands back those taken but not started (due at once, for another
   * worker), and waits for the running ones to end (each within its deadline).
   */
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
   * `handlerEnded` is called once the handler has ended, before the entry's complete (or retry,
   * or burial) is sent; not at all when no handler runs.
   */
  run(job: InboxJob, takenAt: number, handlerEnded?: () => void): Promise<unknown>;
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
        (late) => Promise.all(late.map((job) => handBack(host, job, 'taken after storeTimeout'))),
        () => undefined,
      )
      .catch(() => undefined);
    throw error;
  });
}

/** An entry this worker holds but will not run: pending again, due at once. Never throws. */
function handBack(host: Pick<WorkerHost, 'inbox' | 'storeTimeoutMs'>, job: InboxJob, why: string) {
  return withDeadline('retry', host.storeTimeoutMs, () =>
    host.inbox.retry(job.lease, { delayMs: 0, error: why }),
  ).catch(() => false);
}

/**
 * When the lease of an entry taken at `takenAt` and about to run began: an entry that waited long
 * for its slot (slow handlers) has its lease extended first, so its run starts with at least five
 * sixths of it, as its heartbeats (a third of the lease apart) assume. `undefined` when it must not
 * run: its lease was lost (taken over after it ran out: another run owns it now), or could not be
 * extended (handed back).
 */
async function leaseLeft(host: WorkerHost, job: InboxJob, takenAt: number): Promise<number | undefined> {
  if (leaseNow() - takenAt <= host.leaseMs / 6) return takenAt;
  const sent = leaseNow();
  const held = await withDeadline('extend', host.storeTimeoutMs, () =>
    host.inbox.extend(job.lease, { leaseMs: host.leaseMs }),
  ).catch(() => undefined);
  if (held === undefined) await handBack(host, job, 'handed back unrun: its lease could not be extended');
  return held === true ? sent : undefined;
}

/** A taken entry waiting for a slot, and when its take was sent. */
interface Ready {
  readonly job: InboxJob;
  readonly takenAt: number;
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
  // Taken ahead: at most `concurrency`, topped up (one take out at a time) as soon as a quarter of
  // them has gone to slots, so a take's round trip is covered by what is left: the entries used up
  // meanwhile make the next take's batch.
  const ahead = concurrency;
  const lowWater = ahead - Math.max(1, Math.floor(ahead / 4));
  const ready: Ready[] = [];
  let handlers = 0; // handlers running (or about to: a ready entry's extend)
  let settling = 0; // runs whose handler ended, their complete (retry, burial) in flight
  let stopping = false;
  let runs = 0;
  const running = new Set<Promise<unknown>>();
  // The loop's one wait: for a slot (its entries ready run low, or a slot has nothing ready), or
  // idle after an empty take (till a wake or the poll: a run that ends does not end it, so an idle
  // worker costs one take a poll whatever its runs do). stop() ends either.
  let resume: (() => void) | undefined;
  let forSlot = false;
  const resumeLoop = () => resume?.();
  // Woken since the last take began: a wake that lands while a take runs (which may not have seen
  // its entry) takes once more at once; any number of wakes meanwhile make that one take.
  let woken = false;
  const waker = () => {
    woken = true;
    resumeLoop();
  };
  wakers.add(waker);
  const unwatch = host.inbox.watch?.(host.space, { due: waker, failed: (error) => host.takeFailed(error) });

  /**
   * Until resumed, or `ms` (idle: also ended at once by a wake that came during the take). With
   * `backOff` (after a failed take) no wake ends it: a store that fails while its notifications
   * still arrive is not asked again at each one. stop() ends any wait (`halt`).
   */
  let halt: (() => void) | undefined;
  const wait = (ms?: number, backOff = false) =>
    new Promise<void>((resolve) => {
      if (stopping || (ms !== undefined && woken && !backOff)) return resolve();
      const timer = ms === undefined ? undefined : later(() => done(), ms, { unref: true });
      const done = () => {
        timer?.cancel();
        resume = undefined;
        halt = undefined;
        resolve();
      };
      forSlot = ms === undefined;
      halt = done;
      if (!backOff) resume = done;
    });

  // Take when a slot is free with nothing ready for it, or the entries ready run low.
  const hungry = () => (handlers < concurrency && ready.length === 0) || ready.length <= lowWater;
  /** A slot freed: a ready entry into it, and the loop told when it should take. */
  const freed = () => {
    fill();
    if (forSlot && hungry()) resumeLoop();
  };

  const start = ({ job, takenAt }: Ready) => {
    handlers++;
    let ended = false;
    const handlerEnded = () => {
      if (ended) return;
      ended = true;
      handlers--;
      settling++;
      freed();
    };
    const run = (async () => {
      const leasedAt = await leaseLeft(host, job, takenAt);
      if (leasedAt === undefined) return;
      runs++;
      await host.run(job, leasedAt, handlerEnded);
    })()
      .catch(() => {})
      .finally(() => {
        if (ended) settling--;
        else handlers--;
        running.delete(run);
        freed();
      });
    running.add(run);
  };

  /** Ready entries into free slots: handlers and completes in flight at most 2 × `concurrency`. */
  const fill = () => {
    while (!stopping && ready.length > 0 && handlers < concurrency && handlers + settling < 2 * concurrency) {
      start(ready.shift()!);
    }
  };

  const loop = (async () => {
    while (!stopping) {
      fill();
      if (!hungry()) {
        await wait();
        continue;
      }
      const room = concurrency + ahead - handlers - ready.length;
      let jobs: InboxJob[];
      const takenAt = leaseNow();
      woken = false;
      try {
        jobs = await takeDue(host, room);
      } catch (error) {
        host.takeFailed(error);
        await wait(pollMs, true);
        continue;
      }
      for (const job of jobs) ready.push({ job, takenAt });
      // Idle only when nothing was due: a short take (entries arriving as fast as they are run, or
      // accepted in another process on a store with no watch) is followed by another at once, so
      // a busy worker never sleeps out a poll interval; an empty inbox still costs one take a poll.
      if (jobs.length === 0) await wait(pollMs);
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
      const left = ready.splice(0);
      // Runs never reject (each catches its own end).
      await Promise.all([
        ...left.map(({ job }) => handBack(host, job, 'handed back unrun: its worker stopped')),
        ...running,
      ]);
    },
  };
}
