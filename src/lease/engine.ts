/**
 * The engine shared by `once()` and the receiver: claim, run the work under its deadline with the
 * lease extended while it runs, then confirm or release. It knows no HTTP and no database.
 */
import { HandlerTimeoutError, LeaseLostError } from './errors.js';
import type { Lease, Store } from './types.js';

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
  fingerprint?: string | undefined;
}

/** Why an outcome is degraded: onceonly could not keep its full promise and says so. */
export type DegradedReason = 'store-unavailable' | 'confirm-failed' | 'release-failed' | 'extend-failed';

export type EngineResult<T> =
  | { outcome: 'processed'; attempt: number; value: T; degraded?: DegradedReason | undefined }
  | { outcome: 'lease-lost'; attempt: number; value: T }
  | { outcome: 'failed'; attempt: number; error: unknown; degraded?: DegradedReason | undefined }
  | { outcome: 'duplicate' }
  | { outcome: 'in-flight'; attempt: number; expiresAt: Date }
  | { outcome: 'conflict'; found: 'in-flight' | 'completed' };

/** Retries of a confirm that threw: the work is done, so it is worth a few tries before giving up. */
const CONFIRM_BACKOFF_MS = [25, 100, 400];
/** Later confirm retries, in the background after the answer, each wait doubled up to the last. */
const LATE_CONFIRM_MS = [500, 1_000, 2_000];

/**
 * Claims `key` and, when acquired, runs `work`. A store error from `claim` is thrown to the caller,
 * who decides between failing closed and failing open; every later store error is absorbed and
 * reported as `degraded`, since by then the work has run (confirm) or failed (release).
 */
export async function runClaimed<T>(
  store: Store,
  key: string,
  work: (ctx: WorkContext) => T | Promise<T>,
  options: EngineOptions,
): Promise<EngineResult<T>> {
  const claim = await store.claim(key, { leaseMs: options.leaseMs, fingerprint: options.fingerprint });
  if (claim.status === 'completed') {
    return claim.sameFingerprint ? { outcome: 'duplicate' } : { outcome: 'conflict', found: 'completed' };
  }
  if (claim.status === 'in-flight') {
    return claim.sameFingerprint
      ? { outcome: 'in-flight', attempt: claim.attempt, expiresAt: claim.expiresAt }
      : { outcome: 'conflict', found: 'in-flight' };
  }
  const lease = claim.lease;
  const run = await runWithDeadline(store, lease, work, options);
  if (run.ok) {
    const confirmed = await confirmWithRetry(store, lease, options.retentionMs);
    if (confirmed === false) return { outcome: 'lease-lost', attempt: lease.attempt, value: run.value };
    // The store is still away: the outcome is reported degraded now, and confirming goes on in the
    // background while the lease may still be ours, so a store back within the lease keeps the work
    // from running twice (otherwise the lease runs out unconfirmed and a later duplicate runs it again).
    if (confirmed === 'error') confirmInBackground(store, lease, options.retentionMs, options.leaseMs);
    return {
      outcome: 'processed',
      attempt: lease.attempt,
      value: run.value,
      degraded: confirmed === 'error' ? 'confirm-failed' : run.degraded,
    };
  }
  let degraded = run.degraded;
  try {
    // false means another owner took over: nothing of ours to release, and theirs is left alone.
    await store.release(lease);
  } catch {
    // The lease runs out on its own; the retry gets in after it.
    degraded = 'release-failed';
  }
  return { outcome: 'failed', attempt: lease.attempt, error: run.error, degraded };
}

type RunResult<T> =
  | { ok: true; value: T; degraded?: DegradedReason | undefined }
  | { ok: false; error: unknown; degraded?: DegradedReason | undefined };

async function runWithDeadline<T>(
  store: Store,
  lease: Lease,
  work: (ctx: WorkContext) => T | Promise<T>,
  options: EngineOptions,
): Promise<RunResult<T>> {
  const controller = new AbortController();
  let degraded: DegradedReason | undefined;
  let deadline: ReturnType<typeof setTimeout> | undefined;
  // Extend the lease at a third of its length, so two missed beats still leave it alive.
  const beat = setInterval(
    () => {
      store.extend(lease, { leaseMs: options.leaseMs }).then(
        (held) => {
          if (!held && !controller.signal.aborted) controller.abort(new LeaseLostError(lease.key));
        },
        () => {
          degraded = 'extend-failed';
        },
      );
    },
    Math.max(1, Math.floor(options.leaseMs / 3)),
  );
  beat.unref?.();
  const timedOut = new Promise<never>((_, reject) => {
    deadline = setTimeout(() => {
      const error = new HandlerTimeoutError(options.timeoutMs);
      controller.abort(error);
      reject(error);
    }, options.timeoutMs);
  });
  const ctx: WorkContext = { attempt: lease.attempt, signal: controller.signal, lease };
  const running = Promise.resolve().then(() => work(ctx));
  // A handler that ignores its signal may settle after the deadline; nobody is listening then.
  running.catch(() => {});
  try {
    const value = await Promise.race([running, timedOut]);
    return { ok: true, value, degraded };
  } catch (error) {
    return { ok: false, error, degraded };
  } finally {
    clearInterval(beat);
    clearTimeout(deadline);
  }
}

async function confirmWithRetry(store: Store, lease: Lease, retentionMs: number): Promise<boolean | 'error'> {
  for (let i = 0; ; i++) {
    try {
      // Safe to repeat: a confirm that landed before its answer was lost is still ours.
      return await store.confirm(lease, { retentionMs });
    } catch {
      const wait = CONFIRM_BACKOFF_MS[i];
      if (wait === undefined) return 'error';
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/**
 * Keeps confirming for up to `leaseMs` after the handler ended: the lease was last claimed or
 * extended before that, so this spans all the time the claim may still be ours (a confirm after a
 * takeover changes nothing). Timers are unref'd: this never keeps a process alive, and a process
 * that exits only loses the chance, not correctness.
 */
function confirmInBackground(store: Store, lease: Lease, retentionMs: number, leaseMs: number): void {
  // The monotonic clock: a wall-clock step must not stretch or cut the window.
  const giveUpAt = performance.now() + leaseMs;
  let i = 0;
  const attempt = () => {
    Promise.resolve()
      .then(() => store.confirm(lease, { retentionMs }))
      .then(
        () => {},
        () => {
          const wait = LATE_CONFIRM_MS[Math.min(i++, LATE_CONFIRM_MS.length - 1)]!;
          if (performance.now() + wait <= giveUpAt) setTimeout(attempt, wait).unref?.();
        },
      );
  };
  setTimeout(attempt, LATE_CONFIRM_MS[0]).unref?.();
  i++;
}
