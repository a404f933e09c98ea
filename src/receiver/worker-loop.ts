/**
 * A receiver's workers in this process: a loop that takes due entries ahead of its free slots and
 * runs each under its own fenced lease.
 *
 * Where a worker's time goes is round trips: a take, the handler, a complete per entry. So a slot
 * never waits on either. The loop keeps a few taken entries ready (`concurrency`, up to 4 × while
 * runs are short: {@link aheadDepth}), taking again as they go (one take out at a time, its batch
 * what was used up meanwhile), not one take per freed slot. A slot frees when its handler ends,
 * its complete (or retry, or burial) still in flight: handlers and completes in flight together
 * are at most `concurrency` plus that depth (the completes go to the store together where it can:
 * complete-batch.ts). A ready entry's lease runs from its
 * take: one that waits a third of it is extended while it waits ({@link keepHeld}), and again
 * before it runs if it waited past a sixth since (so the run's heartbeats keep their margin); the
 * entries still ready at `stop()` are handed back, due at once, never run. A take asks for at most
 * 2 × `concurrency`, less after one that missed the store deadline ({@link adaptiveTake}).
 */
import { type Duration, parsePositiveDuration } from '../core/duration.js';
import type { InboxJob, InboxStore } from '../core/inbox.js';
import { type Later, later, leaseNow, withDeadline } from '../core/timers.js';
import { ConfigError } from '../errors.js';

export interface WorkerOptions {
  /**
   * Entries run at once by this worker. It also holds up to as many again taken ahead, ready for a
   * slot that frees (up to 4 × as many while its runs are short: under 50 ms on average).
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
 * bury it without its handler ever running. `late` is given that hand-back's promise (it never
 * rejects; it waits at most one more store deadline for the take to land, past which the take's
 * entries are handed back on their own whenever it does), so a worker's `stop()` awaits it: the
 * store is often closed right after.
 */
export function takeDue(
  host: Pick<WorkerHost, 'inbox' | 'space' | 'leaseMs' | 'storeTimeoutMs'>,
  limit: number,
  late?: (handingBack: Promise<unknown>) => void,
): Promise<InboxJob[]> {
  let taking: Promise<InboxJob[]> | undefined;
  return withDeadline('take', host.storeTimeoutMs, () => {
    taking = host.inbox.take({ limit, leaseMs: host.leaseMs, receiver: host.space });
    return taking;
  }).catch((error: unknown) => {
    if (taking) {
      const landed = taking;
      const back = (jobs: InboxJob[]) =>
        Promise.all(jobs.map((job) => handBack(host, job, 'taken after storeTimeout')));
      const handingBack = withDeadline('take', host.storeTimeoutMs, () => landed)
        .then(back, () => void landed.then(back, () => undefined).catch(() => undefined))
        .catch(() => undefined);
      late?.(handingBack);
    }
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
  const held = await extendHeld(host, job);
  if (held === undefined) await handBack(host, job, NOT_EXTENDED);
  return held === true ? sent : undefined;
}

const NOT_EXTENDED = 'handed back unrun: its lease could not be extended';

/**
 * A held entry's lease extended within the store deadline: true when kept, false when lost (taken
 * over), `undefined` when the store did not answer (the caller hands the entry back). Never throws.
 */
function extendHeld(
  host: Pick<WorkerHost, 'inbox' | 'storeTimeoutMs' | 'leaseMs'>,
  job: InboxJob,
): Promise<boolean | undefined> {
  return withDeadline('extend', host.storeTimeoutMs, () =>
    host.inbox.extend(job.lease, { leaseMs: host.leaseMs }),
  ).catch(() => undefined);
}

/** Runs shorter than this (on average) let a worker take up to 4 × `concurrency` ahead. */
const SHORT_RUN_MS = 50;

/**
 * How many entries a worker keeps taken ahead of its slots. Short runs use up `concurrency` ready
 * entries within a take's round trip, so the next take carries few and the store's per-statement
 * cost sets the pace (PostgreSQL: a take and a complete per two or three entries); while runs are
 * short (a moving average under {@link SHORT_RUN_MS}) the worker holds up to 4 × `concurrency`,
 * whose wait for a slot is then at most a few short runs: each entry's lease and fencing are
 * unchanged, and one that did wait past a sixth of its lease is extended before it runs. Slow runs
 * fall back to `concurrency` (one run over 400 ms moves the mean past the bound at once), so entries
 * are not held from other workers while they wait. And never more than can start within two thirds
 * of a lease at the pace runs go (the mean, or the last run if longer): with runs near the lease's
 * length nothing is held ahead at all. What was held when they turned slow keeps its lease while
 * it waits ({@link keepHeld}).
 */
export function aheadDepth(concurrency: number, leaseMs: number) {
  let meanMs = SHORT_RUN_MS; // no run measured yet: neither short nor slow
  let lastMs = 0;
  const pace = () => Math.max(meanMs, lastMs);
  const ahead = () => {
    const wanted = meanMs < SHORT_RUN_MS ? 4 * concurrency : concurrency;
    const inTime = Math.floor((LATE_SHARE * leaseMs) / Math.max(1, pace())) * concurrency;
    return Math.min(wanted, inTime);
  };
  return {
    ahead,
    /** How long a run takes, as the worker plans with it (ms). */
    pace,
    /** Ready entries at or under this: take again. */
    lowWater: () => {
      const a = ahead();
      return a - Math.max(1, Math.floor(a / 4));
    },
    /** A handler ran `ms`. */
    ran(ms: number) {
      meanMs += (ms - meanMs) / 8;
      lastMs = ms;
    },
  };
}

/** The share of its lease within which the entries held ahead should start, at the runs' pace. */
const LATE_SHARE = 2 / 3;

/**
 * Keeps the leases of the entries held ahead while they wait for a slot: one that has waited a
 * third of its lease is extended, as a run's heartbeat would (one timer, set for the oldest). Not
 * handed back when runs turn slow, nor left to run out: either spends an attempt without a run (the
 * entry is taken again on its next), and on an entry's last one buries it unrun; one slow run among
 * short ones made a worker that planned by its pace hand back what it held, taken again at once. An
 * extend that finds the lease lost drops the entry (another run owns it); one the store does not
 * answer hands it back. Each extend is in `running` until it lands, so `stop()` waits for it.
 */
export function keepHeld(
  host: Pick<WorkerHost, 'inbox' | 'storeTimeoutMs' | 'leaseMs'>,
  ready: Ready[],
  running: Set<Promise<unknown>>,
): { schedule(): void; cancel(): void } {
  const every = host.leaseMs / 3;
  const extending = new Set<Ready>();
  let timer: Later | undefined;
  let at = Number.POSITIVE_INFINITY;
  let cancelled = false;
  const drop = (held: Ready) => {
    const i = ready.indexOf(held);
    if (i >= 0) ready.splice(i, 1);
    return i >= 0;
  };
  const extend = (held: Ready) => {
    extending.add(held);
    const sent = leaseNow();
    const kept: Promise<unknown> = extendHeld(host, held.job)
      .then((still) => {
        if (still === true) held.takenAt = sent;
        else if (drop(held) && still === undefined) return handBack(host, held.job, NOT_EXTENDED);
      })
      .finally(() => {
        extending.delete(held);
        running.delete(kept);
        schedule();
      });
    running.add(kept);
  };
  const check = () => {
    timer = undefined;
    at = Number.POSITIVE_INFINITY;
    const now = leaseNow();
    for (const held of [...ready]) if (!extending.has(held) && now - held.takenAt >= every) extend(held);
    schedule();
  };
  const schedule = () => {
    if (cancelled) return;
    let next = Number.POSITIVE_INFINITY;
    for (const held of ready) if (!extending.has(held)) next = Math.min(next, held.takenAt + every);
    if (next === Number.POSITIVE_INFINITY || (timer && next >= at)) return;
    timer?.cancel();
    at = next;
    timer = later(check, Math.max(0, next - leaseNow()), { unref: true });
  };
  return {
    schedule,
    cancel() {
      cancelled = true;
      timer?.cancel();
    },
  };
}

/** A taken entry waiting for a slot, and when its lease began (its take sent, or its last extend). */
export interface Ready {
  readonly job: InboxJob;
  takenAt: number;
}

function checkedConcurrency(concurrency: number): number {
  if (!Number.isSafeInteger(concurrency) || concurrency < 1) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: worker concurrency must be a positive integer, got ${concurrency}`,
    );
  }
  return concurrency;
}

/**
 * A take ({@link takeDue}) for at most 2 × `concurrency` (the deeper hold while runs are short
 * fills over several takes). A store that takes one entry a round trip (DynamoDB) may not take that
 * many within its deadline, and a take that misses it hands its entries back: asked again for as
 * many, it would miss again, and the worker would never run anything. So a take that failed halves
 * the next one's limit (down to 1), and one that landed within a third of the deadline doubles it.
 */
export function adaptiveTake(
  host: Pick<WorkerHost, 'inbox' | 'space' | 'leaseMs' | 'storeTimeoutMs'>,
  concurrency: number,
  late?: (handingBack: Promise<unknown>) => void,
): (room: number) => Promise<InboxJob[]> {
  const most = 2 * concurrency;
  let limit = most;
  return async (room) => {
    const asked = Math.min(room, limit);
    const sent = leaseNow();
    try {
      const jobs = await takeDue(host, asked, late);
      if (asked >= limit && leaseNow() - sent < host.storeTimeoutMs / 3) limit = Math.min(most, 2 * limit);
      return jobs;
    } catch (error) {
      limit = Math.max(1, Math.floor(asked / 2));
      throw error;
    }
  };
}

/** At stop: the entries still held handed back, and every run, hand-back and extend out awaited. */
function settleAll(host: WorkerHost, left: Ready[], running: Set<Promise<unknown>>): Promise<unknown> {
  // Runs never reject (each catches its own end), nor do hand-backs and extends.
  return Promise.all([
    ...left.map(({ job }) => handBack(host, job, 'handed back unrun: its worker stopped')),
    ...running,
  ]);
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
  const concurrency = checkedConcurrency(options.concurrency ?? 4);
  const pollMs = parsePositiveDuration(options.pollInterval ?? '1s', 'worker pollInterval');
  // Taken ahead (aheadDepth), topped up (one take out at a time) once a quarter has gone to slots.
  const depth = aheadDepth(concurrency, host.leaseMs);
  const ready: Ready[] = [];
  let handlers = 0; // handlers running (or about to: a ready entry's extend)
  let settling = 0; // runs whose handler ended, their complete (retry, burial) in flight
  let stopping = false;
  let runs = 0;
  const running = new Set<Promise<unknown>>();
  const held = keepHeld(host, ready, running);
  // A take out past its deadline: its late entries' hand-back in `running` too, so stop() awaits it.
  const take = adaptiveTake(host, concurrency, (handingBack) => {
    const tracked: Promise<unknown> = handingBack.finally(() => running.delete(tracked));
    running.add(tracked);
  });
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
  const hungry = () => (handlers < concurrency && ready.length === 0) || ready.length <= depth.lowWater();
  /** A slot freed: a ready entry into it, and the loop told when it should take. */
  const freed = () => {
    fill();
    if (forSlot && hungry()) resumeLoop();
  };

  const start = ({ job, takenAt }: Ready) => {
    handlers++;
    let ended = false;
    let began = 0;
    const handlerEnded = () => {
      if (ended) return;
      ended = true;
      if (began > 0) depth.ran(leaseNow() - began);
      handlers--;
      settling++;
      freed();
    };
    const run = (async () => {
      const leasedAt = await leaseLeft(host, job, takenAt);
      if (leasedAt === undefined) return;
      runs++;
      began = leaseNow();
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

  /**
   * Ready entries into free slots. Handlers and completes in flight together are bounded by the
   * entries the worker may hold (`concurrency` + its depth ahead): a store whose completes do not
   * land stops the worker after that many runs; while they do land, the completes asked for during
   * one batch's round trip all go in the next (at 2 × `concurrency` a batch of 15 alternated with a
   * lone complete at concurrency 8).
   */
  const fill = () => {
    while (
      !stopping &&
      ready.length > 0 &&
      handlers < concurrency &&
      handlers + settling < concurrency + depth.ahead()
    ) {
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
      const room = concurrency + depth.ahead() - handlers - ready.length;
      let jobs: InboxJob[];
      const takenAt = leaseNow();
      woken = false;
      try {
        jobs = await take(room);
      } catch (error) {
        host.takeFailed(error);
        await wait(pollMs, true);
        continue;
      }
      for (const job of jobs) ready.push({ job, takenAt });
      held.schedule();
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
      held.cancel();
      await settleAll(host, ready.splice(0), running);
    },
  };
}
