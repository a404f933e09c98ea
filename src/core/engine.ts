/**
 * The engine shared by `once()` and the receiver: claim, run the work under its deadline with the
 * lease extended while it runs, then confirm or release. It knows no HTTP and no database.
 */
import { HandlerTimeoutError, LeaseLostError, StoreTimeoutError } from './errors.js';
import { type TelemetryRun, timedPhase } from './telemetry.js';
import {
  callDeadlineMs,
  confirmMarginMs,
  leaseNow,
  sleep,
  type Tick,
  wheel,
  withDeadline,
} from './timers.js';
import type { Claim, Lease, Store } from './types.js';

/** What the work receives. */
export interface WorkContext {
  /** 1 on the first run of this key, +1 after every takeover: pass it downstream as a fencing number. */
  readonly attempt: number;
  /** Aborted when the deadline passes or the lease is lost; stop work and do not commit side effects. */
  readonly signal: AbortSignal;
  /** The lease held while the work runs (key, token, attempt, fingerprint, expiry at claim). */
  readonly lease: Lease;
}

export interface EngineOptions {
  leaseMs: number;
  retentionMs: number;
  timeoutMs: number;
  /** The deadline of every store call; past it the call is a store error. */
  storeTimeoutMs: number;
  fingerprint?: string | undefined;
  /** The run's telemetry, when the caller has it: phases and store calls are reported to it. */
  telemetry?: TelemetryRun | undefined;
}

/** Why an outcome is degraded: onceonly could not keep its full promise and says so. */
export type DegradedReason = 'store-unavailable' | 'confirm-failed' | 'release-failed' | 'extend-failed';

export type EngineResult<T> =
  | {
      outcome: 'processed';
      attempt: number;
      value: T;
      degraded?: DegradedReason | undefined;
      cause?: unknown;
    }
  | { outcome: 'lease-lost'; attempt: number; value: T }
  | {
      outcome: 'failed';
      attempt: number;
      error: unknown;
      degraded?: DegradedReason | undefined;
      cause?: unknown;
    }
  | { outcome: 'duplicate' }
  | { outcome: 'in-flight'; attempt: number; expiresAt: Date }
  | { outcome: 'conflict'; found: 'in-flight' | 'completed' };

/** Quick retries of a confirm that failed fast (a refused connection): the work is done, so worth a few. */
const CONFIRM_BACKOFF_MS = [25, 100, 400];
/**
 * The longest wait between two background confirm tries: a twentieth of the lease, within 50 ms–1 s,
 * so that a store back shortly before the lease's end is still found in time.
 */
function lateConfirmCapMs(leaseMs: number): number {
  return Math.min(1_000, Math.max(50, Math.floor(leaseMs / 20)));
}

/**
 * The lease as this process knows it: the latest point, on the monotonic clock, before which the
 * lease is surely still ours. Each claim or extend that the store acknowledged set the lease's end
 * to the store's now + leaseMs, and the store's now was no earlier than when the call was sent, so
 * "sent + leaseMs" is never later than the store's own expiry.
 */
interface LeaseClock {
  boundAt: number;
}

/**
 * Claims `key` and, when acquired, runs `work`. A store error from `claim` (or its deadline) is
 * thrown to the caller, who decides between failing closed and failing open; every later store
 * error is absorbed and reported as `degraded`, since by then the work has run (confirm) or failed
 * (release).
 */
export async function runClaimed<T>(
  store: Store,
  key: string,
  work: (ctx: WorkContext) => T | Promise<T>,
  options: EngineOptions,
): Promise<EngineResult<T>> {
  const sentAt = leaseNow();
  let pending: PromiseLike<Claim>;
  try {
    pending = store.claim(key, {
      leaseMs: options.leaseMs,
      fingerprint: options.fingerprint,
      retentionMs: options.retentionMs,
    });
  } catch (error) {
    pending = Promise.reject(error);
  }
  let claim: Claim;
  try {
    claim = await withDeadline(
      'claim',
      callDeadlineMs(store, 'claim', options.storeTimeoutMs),
      options.telemetry ? () => timedPhase(options.telemetry, 'claim', () => pending) : () => pending,
    );
  } catch (error) {
    if (error instanceof StoreTimeoutError) {
      // The claim may still land (a frozen store resumes): a lease nobody runs would hold the key
      // for its whole length, so it is given up as soon as it is seen (the retry gets attempt + 1).
      Promise.resolve(pending)
        .then(
          (late) => (late.status === 'acquired' ? store.release(late.lease) : undefined),
          () => undefined,
        )
        .catch(() => undefined);
    }
    throw error;
  }
  if (claim.status === 'completed') {
    return claim.sameFingerprint ? { outcome: 'duplicate' } : { outcome: 'conflict', found: 'completed' };
  }
  if (claim.status === 'in-flight') {
    return claim.sameFingerprint
      ? { outcome: 'in-flight', attempt: claim.attempt, expiresAt: claim.expiresAt }
      : { outcome: 'conflict', found: 'in-flight' };
  }
  const lease = claim.lease;
  return runLeased(lease, sentAt, work, new StoreOps(store, options.retentionMs), options);
}

/**
 * What runs a lease needs of wherever it lives: the claim store, or an inbox. `settle` ends a run
 * that succeeded (confirm, complete), `giveUp` one that failed (release, or the inbox's retry/bury).
 * Each is `false` when the lease was lost to another owner.
 */
export interface LeaseOps {
  extend(lease: Lease, leaseMs: number): PromiseLike<boolean>;
  settle(lease: Lease): PromiseLike<boolean>;
  giveUp(lease: Lease, error: unknown): PromiseLike<boolean>;
  /** The deadline of a call of `op`, given the store-call deadline (see `callDeadlineMs`). @default ms */
  deadlineMs?(op: 'extend' | 'settle' | 'giveUp', ms: number): number;
}

/** The deadline of one call through `ops`, decided at the call (a store's methods may change meanwhile). */
function deadlineOf(ops: LeaseOps, op: 'extend' | 'settle' | 'giveUp', ms: number): number {
  return ops.deadlineMs ? ops.deadlineMs(op, ms) : ms;
}

const STORE_METHOD = { extend: 'extend', settle: 'confirm', giveUp: 'release' } as const;

/** The claim store's {@link LeaseOps}: one object per run, its methods on the prototype (no closures). */
class StoreOps implements LeaseOps {
  constructor(
    private readonly store: Store,
    private readonly retentionMs: number,
  ) {}

  extend(lease: Lease, leaseMs: number): PromiseLike<boolean> {
    return this.store.extend(lease, { leaseMs });
  }

  settle(lease: Lease): PromiseLike<boolean> {
    return this.store.confirm(lease, { retentionMs: this.retentionMs });
  }

  // false means another owner took over: nothing of ours to release, and theirs is left alone.
  giveUp(lease: Lease): PromiseLike<boolean> {
    return this.store.release(lease);
  }

  deadlineMs(op: 'extend' | 'settle' | 'giveUp', ms: number): number {
    return callDeadlineMs(this.store, STORE_METHOD[op], ms);
  }
}

/**
 * Runs `work` under a lease already held (claimed at `sentAt` on {@link leaseNow}'s clock):
 * extended while it runs, aborted at its deadline; then settled (confirm) or given up (release).
 * Store errors after the claim are absorbed and reported as `degraded`: by then the work has run or
 * failed. A settle that fails is retried in the background while the lease is surely still ours.
 */
export async function runLeased<T>(
  lease: Lease,
  sentAt: number,
  work: (ctx: WorkContext) => T | Promise<T>,
  ops: LeaseOps,
  options: Pick<EngineOptions, 'leaseMs' | 'timeoutMs' | 'storeTimeoutMs' | 'telemetry'>,
): Promise<EngineResult<T>> {
  const clock: LeaseClock = { boundAt: sentAt + options.leaseMs };
  const running = runWithDeadline(ops, lease, work, options, clock);
  const run = running instanceof Promise ? await running : running;
  if (run.ok) {
    let confirmed: Confirmed;
    if (options.telemetry) confirmed = await confirmNow(ops, lease, options, clock);
    else {
      // The first try inline, the commonest case (one async frame less per run); retries as
      // confirmTries makes them, counting from this try.
      const started = leaseNow();
      try {
        confirmed = {
          status: await withDeadline('confirm', deadlineOf(ops, 'settle', options.storeTimeoutMs), () =>
            ops.settle(lease),
          ),
        };
      } catch (error) {
        confirmed = await confirmTries(ops, lease, options, clock, started, { error });
      }
    }
    if (confirmed.status === false)
      return { outcome: 'lease-lost', attempt: lease.attempt, value: run.value };
    if (confirmed.status === 'error') {
      // The store is away: the outcome is reported degraded now, and confirming goes on in the
      // background while the lease is surely still ours, so a store back within the lease keeps the
      // work from running twice. Never past it: after the lease a takeover may have run the work.
      confirmLater(ops, lease, options, clock);
      return {
        outcome: 'processed',
        attempt: lease.attempt,
        value: run.value,
        degraded: 'confirm-failed',
        cause: confirmed.error,
      };
    }
    return { outcome: 'processed', attempt: lease.attempt, value: run.value, degraded: run.degraded };
  }
  let degraded = run.degraded;
  let cause: unknown;
  try {
    await withDeadline('release', deadlineOf(ops, 'giveUp', options.storeTimeoutMs), () =>
      timedPhase(options.telemetry, 'release', () => ops.giveUp(lease, run.error)),
    );
  } catch (error) {
    // The lease runs out on its own; the retry gets in after it.
    degraded = 'release-failed';
    cause = error;
  }
  return cause === undefined
    ? { outcome: 'failed', attempt: lease.attempt, error: run.error, degraded }
    : { outcome: 'failed', attempt: lease.attempt, error: run.error, degraded, cause };
}

type RunResult<T> =
  | { ok: true; value: T; degraded?: DegradedReason | undefined }
  | { ok: false; error: unknown; degraded?: DegradedReason | undefined };

/**
 * The abort machinery of one run, made only when someone looks: a fast handler that never reads its
 * `signal` costs no AbortController. Aborting before that is remembered and replayed.
 */
class LazySignal {
  private controller: AbortController | undefined;
  private reason: unknown;
  aborted = false;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
  }
}

const ABORT = Symbol('onceonly.abort');
const WORK = Symbol('onceonly.work');

/** A context's `signal`: an own enumerable accessor (as a literal's getter), from one shared descriptor. */
const SIGNAL_PROPERTY: PropertyDescriptor = {
  get(this: { [WORK]: WorkContext }): AbortSignal {
    return this[WORK].signal;
  },
  enumerable: true,
  configurable: true,
};

/**
 * Gives a context handed to user code (a handler's, once()'s work's) an own enumerable `signal` read
 * through to `work` when read, so the abort machinery exists only for code that looks at it, and a
 * spread, `Object.keys`, a Proxy or a child object sees it. `work` is kept under a symbol.
 */
export function signalFrom(target: object, work: WorkContext): void {
  (target as { [WORK]: WorkContext })[WORK] = work;
  Object.defineProperty(target, 'signal', SIGNAL_PROPERTY);
}

/**
 * What the work receives. Not an object literal with a getter (V8 builds such a literal at run
 * time, about half a microsecond each); `signal` reads through to the lazy abort, which lives under
 * a symbol (so a Proxy or a child object reads it too). The getter is the prototype's: the
 * receiver's handlers get their own context, and `once()` hands its work a copy whose `signal` is an
 * own property (both by {@link signalFrom}).
 */
class RunContext implements WorkContext {
  readonly [ABORT]: LazySignal;
  constructor(
    readonly attempt: number,
    readonly lease: Lease,
    abort: LazySignal,
  ) {
    this[ABORT] = abort;
  }

  get signal(): AbortSignal {
    return this[ABORT].signal;
  }
}

function runWithDeadline<T>(
  ops: LeaseOps,
  lease: Lease,
  work: (ctx: WorkContext) => T | Promise<T>,
  options: Pick<EngineOptions, 'leaseMs' | 'timeoutMs' | 'storeTimeoutMs' | 'telemetry'>,
  clock: LeaseClock,
): RunResult<T> | Promise<RunResult<T>> {
  const startedAt = leaseNow();
  const deadlineAt = startedAt + options.timeoutMs;
  const abort = new LazySignal();
  const ctx = new RunContext(lease.attempt, lease, abort);
  let running: T | Promise<T>;
  const timed = options.telemetry?.phase('handler');
  try {
    running = work(ctx);
  } catch (error) {
    timed?.end(error);
    return { ok: false, error };
  }
  // A handler that returned at once needs no timer and no heartbeat: none could have fired while
  // it ran (one thread), and it is over. Past its deadline all the same (long work, or a host's
  // suspend meanwhile), it failed, as an async one would.
  if (!isThenable(running)) {
    if (leaseNow() >= deadlineAt) {
      const error = new HandlerTimeoutError(options.timeoutMs);
      timed?.end(error);
      return { ok: false, error };
    }
    timed?.end();
    return { ok: true, value: running };
  }
  // The handler's own end, even past its deadline (a handler that ignores its signal).
  if (timed) {
    running.then(
      () => timed.end(),
      (error: unknown) => timed.end(error),
    );
  }
  const pending = running;
  return new Promise<RunResult<T>>((resolve) => {
    let degraded: DegradedReason | undefined;
    let beating = false;
    let ended = false;
    // Extend the lease at a third of its length, so two missed beats still leave it alive.
    const period = Math.max(1, Math.floor(options.leaseMs / 3));
    let beatAt = startedAt + period;
    // One wheel event per run, for whichever comes first: the deadline or the next heartbeat.
    let tick: Tick;
    const arm = () => {
      const at = Math.min(deadlineAt, beatAt);
      // Ref'd: the deadline is always still ahead, and someone awaits it.
      tick = wheel.add(Math.max(0, at - leaseNow()), due, true);
    };
    const end = (result: RunResult<T>) => {
      if (ended) return; // a handler that ignores its signal may settle after the deadline
      // Its end came after its deadline, before the deadline's tick (within the wheel's 10 ms, or
      // at the first tick after a host's suspend, when the lease may be long gone): past the
      // deadline all the same, released, never confirmed.
      if (result.ok && leaseNow() >= deadlineAt) {
        timedOut();
        return;
      }
      ended = true;
      wheel.cancel(tick);
      result.degraded = degraded;
      resolve(result);
    };
    const timedOut = () => {
      const error = new HandlerTimeoutError(options.timeoutMs);
      abort.abort(error);
      end({ ok: false, error });
    };
    const due = () => {
      if (ended) return;
      const now = leaseNow();
      if (now >= deadlineAt) {
        timedOut();
        return;
      }
      if (now >= beatAt) {
        beatAt = now + period;
        renew();
      }
      arm();
    };
    const renew = () => {
      if (beating) return; // the last extend is still out (a slow store): do not pile up calls
      beating = true;
      const sent = leaseNow();
      withDeadline('extend', deadlineOf(ops, 'extend', options.storeTimeoutMs), () =>
        timedPhase(options.telemetry, 'extend', () => ops.extend(lease, options.leaseMs)),
      )
        .then(
          (held) => {
            if (held) clock.boundAt = Math.max(clock.boundAt, sent + options.leaseMs);
            else abort.abort(new LeaseLostError(lease.key));
          },
          () => {
            degraded = 'extend-failed';
          },
        )
        .finally(() => {
          beating = false;
        });
    };
    arm();
    pending.then(
      (value) => end({ ok: true, value }),
      (error: unknown) => end({ ok: false, error }),
    );
  });
}

function isThenable<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as Promise<T> | null)?.then === 'function';
}

type Confirmed = { status: boolean } | { status: 'error'; error: unknown };

/**
 * The confirm after the work succeeded. The first try always goes out (invariant 3: a record that
 * vanished is written completed, another owner's is left alone). Retries after a store error are
 * quick and few, only while the lease is surely ours, and stop at once when a try timed out (the
 * store is frozen: the rest waits in the background instead of holding the answer).
 */
function confirmNow(
  ops: LeaseOps,
  lease: Lease,
  options: Pick<EngineOptions, 'leaseMs' | 'storeTimeoutMs' | 'telemetry'>,
  clock: LeaseClock,
): Promise<Confirmed> {
  const timed = options.telemetry?.phase('confirm');
  if (!timed) return confirmTries(ops, lease, options, clock);
  return confirmTries(ops, lease, options, clock).then((confirmed) => {
    if (confirmed.status === 'error') timed.end(confirmed.error);
    else timed.end(undefined, confirmed.status);
    return confirmed;
  });
}

async function confirmTries(
  ops: LeaseOps,
  lease: Lease,
  options: Pick<EngineOptions, 'leaseMs' | 'storeTimeoutMs'>,
  clock: LeaseClock,
  started = leaseNow(),
  /** The first try was made already (at `started`) and failed with this. */
  failed?: { error: unknown },
): Promise<Confirmed> {
  const margin = confirmMarginMs(options.leaseMs);
  let error: unknown;
  for (let i = 0; ; i++) {
    if (i === 0 && failed) error = failed.error;
    else {
      const left = i === 0 ? options.storeTimeoutMs : clock.boundAt - margin - leaseNow();
      // The wait before this try may have outlasted the lease (a stall, a host's suspend): a try
      // is never sent after its end.
      if (left <= 0) return { status: 'error', error };
      try {
        // Safe to repeat: a confirm that landed before its answer was lost is still ours.
        const settled = await withDeadline(
          'confirm',
          Math.min(deadlineOf(ops, 'settle', options.storeTimeoutMs), left),
          () => ops.settle(lease),
        );
        return { status: settled };
      } catch (caught) {
        error = caught;
      }
    }
    const wait = CONFIRM_BACKOFF_MS[i];
    const now = leaseNow();
    if (
      wait === undefined ||
      error instanceof StoreTimeoutError ||
      now - started + wait > options.storeTimeoutMs ||
      now + wait >= clock.boundAt - margin
    ) {
      return { status: 'error', error };
    }
    await sleep(wait);
  }
}

/**
 * Keeps confirming in the background after the answer, while the lease is surely still ours: each
 * try is sent only before the lease's end (as last renewed) minus a margin, and waits no longer
 * than that. A confirm after the lease could land after a takeover that ran the work again and
 * released it (and, once that record is forgotten, write it completed: the retry would be lost).
 * Timers are unref'd: this never keeps a process alive, and a process that exits only loses the
 * chance, not correctness.
 */
function confirmLater(
  ops: LeaseOps,
  lease: Lease,
  options: Pick<EngineOptions, 'leaseMs' | 'storeTimeoutMs'>,
  clock: LeaseClock,
): void {
  const margin = confirmMarginMs(options.leaseMs);
  const cap = lateConfirmCapMs(options.leaseMs);
  let wait = Math.min(100, cap);
  const attempt = () => {
    const left = clock.boundAt - margin - leaseNow();
    if (left <= 0) return;
    withDeadline('confirm', Math.min(deadlineOf(ops, 'settle', options.storeTimeoutMs), left), () =>
      ops.settle(lease),
    ).then(
      () => {},
      () => schedule(),
    );
  };
  const schedule = () => {
    if (leaseNow() + wait >= clock.boundAt - margin) return;
    wheel.add(wait, attempt, false);
    wait = Math.min(wait * 2, cap);
  };
  schedule();
}
