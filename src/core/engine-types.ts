/**
 * The engine's types: what the work receives, the options and results of a run, and what a run
 * needs of wherever its lease lives (`LeaseOps`, `LeaseClock`).
 */

import type { Jsonified, StepContext, StepStore } from './step-store.js';
import type { TelemetryRun } from './telemetry.js';
import type { Lease } from './types.js';

/** What the work receives. */
export interface WorkContext {
  /** 1 on the first run of this key, +1 after every takeover: pass it downstream as a fencing number. */
  readonly attempt: number;
  /** Aborted when the deadline passes or the lease is lost; stop work and do not commit side effects. */
  readonly signal: AbortSignal;
  /** The lease held while the work runs (key, token, attempt, fingerprint, expiry at claim). */
  readonly lease: Lease;
  /**
   * Runs `fn` once per key and step name: its result (JSON, at most 64 KiB) is stored under the key
   * before the work goes on, and a later run of the same key (after a throw, a deadline, a crash
   * and takeover) gets it back without running `fn` again. A step that threw runs again next time.
   * The result is what JSON makes of it, on the first run as on a later one.
   * @example const charge = await ctx.step('charge', ({ idempotencyKey }) =>
   *   stripe.paymentIntents.create(params, { idempotencyKey }).then((pi) => pi.id));
   */
  step<R>(name: string, fn: (ctx: StepContext) => R | Promise<R>): Promise<Jsonified<Awaited<R>>>;
  /**
   * A stable key for an API that deduplicates on one (Stripe's `Idempotency-Key`): the same on every
   * attempt and process, different across keys and names. `oo_` and 32 base64url characters.
   */
  idempotencyKey(name?: string): string;
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
  /** Where the run's steps are kept (the store's or the inbox's), when it keeps any. */
  readonly steps?: StepStore | undefined;
}

/**
 * The lease as this process knows it: the latest point, on the monotonic clock, before which the
 * lease is surely still ours. Each claim or extend that the store acknowledged set the lease's end
 * to the store's now + leaseMs, and the store's now was no earlier than when the call was sent, so
 * "sent + leaseMs" is never later than the store's own expiry.
 */
export interface LeaseClock {
  boundAt: number;
}
