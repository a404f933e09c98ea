/**
 * The confirm after the work succeeded: tried at once, retried quickly and few times while the lease
 * is surely ours, and on in the background when the store froze (`confirmLater`).
 */

import type { EngineOptions, LeaseClock, LeaseOps } from './engine-types.js';
import { StoreTimeoutError } from './errors.js';
import { confirmMarginMs, leaseNow, sleep, wheel, withDeadline } from './timers.js';
import type { Lease } from './types.js';

/** Quick retries of a confirm that failed fast (a refused connection): the work is done, so worth a few. */
const CONFIRM_BACKOFF_MS = [25, 100, 400];
/**
 * The longest wait between two background confirm tries: a twentieth of the lease, within 50 ms–1 s,
 * so that a store back shortly before the lease's end is still found in time.
 */
function lateConfirmCapMs(leaseMs: number): number {
  return Math.min(1_000, Math.max(50, Math.floor(leaseMs / 20)));
}

/** The deadline of one call through `ops`, decided at the call (a store's methods may change meanwhile). */
export function deadlineOf(ops: LeaseOps, op: 'extend' | 'settle' | 'giveUp', ms: number): number {
  return ops.deadlineMs ? ops.deadlineMs(op, ms) : ms;
}

export type Confirmed = { status: boolean } | { status: 'error'; error: unknown };

/**
 * The confirm after the work succeeded. The first try always goes out (invariant 3: a record that
 * vanished is written completed, another owner's is left alone). Retries after a store error are
 * quick and few, only while the lease is surely ours, and stop at once when a try timed out (the
 * store is frozen: the rest waits in the background instead of holding the answer).
 */
export function confirmNow(
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

export async function confirmTries(
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
export function confirmLater(
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
