/**
 * The engine shared by `once()` and the receiver: claim, run the work under its deadline with the
 * lease extended while it runs, then confirm or release. It knows no HTTP and no database.
 */
import { type Confirmed, confirmLater, confirmNow, confirmTries, deadlineOf } from './confirm.js';
import type {
  DegradedReason,
  EngineOptions,
  EngineResult,
  LeaseClock,
  LeaseOps,
  WorkContext,
} from './engine-types.js';
import { ConfigError, HandlerTimeoutError, LeaseLostError, StoreTimeoutError } from './errors.js';
import { idempotencyKeyOf, type Jsonified, RunSteps, type StepContext, type StepStore } from './steps.js';
import { timedPhase } from './telemetry.js';
import { callDeadlineMs, leaseNow, type Tick, wheel, withDeadline } from './timers.js';
import type { Claim, Lease, Store } from './types.js';

export type { DegradedReason, EngineOptions, EngineResult, LeaseOps, WorkContext } from './engine-types.js';

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

  get steps(): StepStore | undefined {
    return this.store.steps;
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
const STEPS = Symbol('onceonly.steps');

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
  readonly [STEPS]: { store: StepStore | undefined; storeTimeoutMs: number; run?: RunSteps };
  constructor(
    readonly attempt: number,
    readonly lease: Lease,
    abort: LazySignal,
    steps: StepStore | undefined,
    storeTimeoutMs: number,
  ) {
    this[ABORT] = abort;
    this[STEPS] = { store: steps, storeTimeoutMs };
  }

  get signal(): AbortSignal {
    return this[ABORT].signal;
  }

  step<R>(name: string, fn: (ctx: StepContext) => R | Promise<R>): Promise<Jsonified<Awaited<R>>> {
    // Made on the first step: a handler without steps costs nothing.
    const s = this[STEPS];
    s.run ??= new RunSteps(
      s.store,
      { key: this.lease.key, attempt: this.attempt, lease: this.lease },
      s.storeTimeoutMs,
      () => this.signal,
    );
    return s.run.step(name, fn);
  }

  idempotencyKey(name?: string): string {
    return idempotencyKeyOf(this.lease.key, name);
  }
}

/**
 * The context of work run without a lease (an unkeyed delivery, or a store that is down with the
 * receiver failing open): steps keep to the same rules (names, JSON, one run per name) and run every
 * time, keeping nothing; the idempotency key is the key's when there is one.
 */
export class UnguardedContext implements WorkContext {
  readonly lease = undefined as never;
  #steps: RunSteps | undefined;
  constructor(
    readonly attempt: number,
    readonly signal: AbortSignal,
    private readonly key: string | undefined,
  ) {}

  step<R>(name: string, fn: (ctx: StepContext) => R | Promise<R>): Promise<Jsonified<Awaited<R>>> {
    this.#steps ??= new RunSteps(
      undefined,
      { key: this.key, attempt: this.attempt, lease: undefined },
      Number.POSITIVE_INFINITY,
      () => this.signal,
    );
    return this.#steps.step(name, fn);
  }

  idempotencyKey(name?: string): string {
    if (this.key === undefined) {
      throw new ConfigError(
        'unkeyed',
        'onceonly: this delivery has no key (the provider sent no usable id), so it has no stable idempotency key',
      );
    }
    return idempotencyKeyOf(this.key, name);
  }
}

/** A context's steps and idempotency keys, read through to the run it was made from (see {@link signalFrom}). */
export function stepOf<R>(
  target: object,
  name: string,
  fn: (ctx: StepContext) => R | Promise<R>,
): Promise<Jsonified<Awaited<R>>> {
  return (target as { [WORK]: WorkContext })[WORK].step(name, fn);
}

export function idempotencyKeyFrom(target: object, name?: string): string {
  return (target as { [WORK]: WorkContext })[WORK].idempotencyKey(name);
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
  const ctx = new RunContext(lease.attempt, lease, abort, ops.steps, options.storeTimeoutMs);
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

/** Whether a value is a promise or another thenable (a step that answers later). */
export function isThenable<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as Promise<T> | null)?.then === 'function';
}
