/**
 * Inbox mode for the receiver: a verified delivery is written durably under its dedup key in one
 * atomic step and answered 2xx at once (`accepted`); workers then run it under fenced leases, retry
 * it with backoff when it fails, and bury it (dead, kept, visible) after too many attempts or too
 * long. Hybrid mode runs the handler inline first within a short budget and hands the entry over
 * past it, still running under its lease.
 */

import { type Duration, parsePositiveDuration } from '../core/duration.js';
import { type EngineResult, type LeaseOps, runLeased, type WorkContext } from '../core/engine.js';
import type { InboxStore } from '../core/inbox.js';
import { causeOf } from '../core/logger.js';
import type { TelemetryRun } from '../core/telemetry.js';
import { sleep } from '../core/timers.js';
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
 * failure led to. `handlerEnded` is called once, when the first of them is sent (the handler has
 * ended by then).
 */
export function entryOps(
  inbox: InboxStore,
  policy: InboxPolicy,
  retentionMs: number,
  acceptedAt: Date,
  handlerEnded?: () => void,
  complete: InboxStore['complete'] = (lease, options) => inbox.complete(lease, options),
): LeaseOps & { decided: InboxRunEnd | undefined } {
  let ended = handlerEnded;
  const end = () => {
    const call = ended;
    ended = undefined;
    call?.();
  };
  const ops = {
    decided: undefined as InboxRunEnd | undefined,
    steps: inbox.steps,
    extend: (lease: Lease, leaseMs: number) => inbox.extend(lease, { leaseMs }),
    settle: async (lease: Lease) => {
      end();
      const done = await complete(lease, { retentionMs, dropBody: policy.dropBody });
      ops.decided = done ? { state: 'completed' } : { state: 'lost' };
      return done;
    },
    giveUp: async (lease: Lease, error: unknown) => {
      end();
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
    /** Called once the handler has ended, as its complete (retry, burial) is sent. */
    handlerEnded?: (() => void) | undefined;
    /** `inbox.complete`, or one that batches (complete-batch.ts). */
    complete?: InboxStore['complete'] | undefined;
  },
): Promise<{ result: EngineResult<T>; end: InboxRunEnd | undefined }> {
  const ops = entryOps(
    inbox,
    options.policy,
    options.retentionMs,
    acceptedAt,
    options.handlerEnded,
    options.complete,
  );
  const result = await runLeased(lease, sentAt, work, ops, options);
  return { result, end: ops.decided };
}

export { sleep };
