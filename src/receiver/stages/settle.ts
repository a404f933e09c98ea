/**
 * The inline stages after the key: claim the event's key, run the handler under its deadline,
 * confirm or release (`settle`); run without a lease where there is no key or the store is down and
 * the receiver fails open (`runUnguarded`); remember an ignored delivery of an unsigned type
 * (`remember`). And the one store failure path every stage takes (`storeFailed`).
 */
import {
  type DegradedReason,
  type EngineResult,
  runClaimed,
  UnguardedContext,
  type WorkContext,
} from '../../core/engine.js';
import { timeoutSignal } from '../../core/timers.js';
import { HandlerTimeoutError, type StoreUnavailableError } from '../../errors.js';
import { type ReceiverCore, storeError } from '../core.js';
import { Context } from '../delivery.js';
import { type Done, failureCode } from '../outcome.js';
import type { DeliveryResult } from '../result.js';
import type { HandlerContext } from '../types.js';
import type { Keyed, RawDelivery, Runnable } from '../work.js';

/**
 * A store call that failed (or did not answer in time): run without dedup when the receiver fails
 * open for an outage (`open`), else 503 with Retry-After so the provider retries.
 */
export function storeFailed(
  core: ReceiverCore,
  cause: unknown,
  done: Done,
  open: (error: StoreUnavailableError) => DeliveryResult | Promise<DeliveryResult>,
): DeliveryResult | Promise<DeliveryResult> {
  const error = storeError(cause);
  if (core.failsOpen(error)) return open(error);
  return done('store-unavailable', 503, { code: error.code, error, retryAfter: core.retryAfterS });
}

/** The handler's context for one run of an event. */
export function contextOf(e: Keyed, delivery: RawDelivery, work: WorkContext): HandlerContext<unknown> {
  return new Context(e.event, e.type, e.id, e.key, work, delivery);
}

/** Claims the event's key, runs the handler under its deadline, confirms or releases: one outcome. */
export async function settle(
  core: ReceiverCore,
  e: Runnable,
  delivery: RawDelivery,
  done: Done,
): Promise<DeliveryResult> {
  if (e.key === undefined) return runUnguarded(core, e, delivery, done, { outcome: 'unkeyed' });
  let result: Awaited<ReturnType<typeof runClaimed<unknown>>>;
  // Called as a plain function, as a handler always was: `this` is undefined, never the record.
  const { handler } = e;
  try {
    result = await runClaimed(
      core.store,
      e.key,
      (work) => handler(contextOf(e, delivery, work)),
      core.engineOptions(e.fingerprint, e.run, e.timeoutMs),
    );
  } catch (cause) {
    return storeFailed(core, cause, done, (error) =>
      runUnguarded(core, e, delivery, done, { degraded: 'store-unavailable', storeError: error }),
    );
  }
  switch (result.outcome) {
    case 'processed':
    case 'lease-lost':
    case 'failed':
      return ran(core, result, done);
    case 'duplicate':
      return done('duplicate', 200);
    case 'in-flight':
      if (core.onInFlight === 'acknowledge') return done('in-flight', 200, { attempt: result.attempt });
      return done('in-flight', 409, {
        attempt: result.attempt,
        // Come back when the running lease would have run out, within a minute.
        retryAfter: Math.max(1, Math.min(60, Math.ceil((result.expiresAt.getTime() - Date.now()) / 1000))),
      });
    case 'conflict':
      return core.conflict(done, e.typeOnly);
  }
}

/** An inbox entry's state after its run, and whether the run buried it. */
export interface EntryEnd {
  readonly inbox: DeliveryResult['inbox'];
  readonly dead: boolean;
}

/**
 * The result of a handler's run under a lease, processed, lease-lost or failed (inline, or an inbox
 * entry's run with `entry`: its state after the run, and dead when the run buried it).
 */
export function ran(
  core: ReceiverCore,
  result: Extract<EngineResult<unknown>, { outcome: 'processed' | 'lease-lost' | 'failed' }>,
  done: Done,
  entry?: EntryEnd,
): DeliveryResult {
  switch (result.outcome) {
    case 'processed':
      return done('processed', 200, {
        attempt: result.attempt,
        degraded: result.degraded,
        cause: result.cause,
        response: core.asResponse(result.value),
        inbox:
          entry === undefined
            ? undefined
            : (entry.inbox ?? { state: 'processing', attempts: result.attempt }),
      });
    case 'lease-lost':
      return done('lease-lost', 200, { attempt: result.attempt, response: core.asResponse(result.value) });
    case 'failed':
      return done(entry?.dead ? 'dead' : 'failed', 500, {
        attempt: result.attempt,
        degraded: result.degraded,
        cause: result.cause,
        code: failureCode(result.error),
        error: result.error,
        inbox: entry?.inbox,
      });
  }
}

/** How an unguarded run is reported: as `unkeyed`, or degraded by the store error it stands in for. */
export interface Unguarded {
  outcome?: 'unkeyed';
  degraded?: DegradedReason;
  storeError?: unknown;
}

/** Runs the handler without a lease: unkeyed deliveries, and fail-open when the store is down. */
export async function runUnguarded(
  core: ReceiverCore,
  e: Runnable,
  delivery: RawDelivery,
  done: Done,
  how: Unguarded,
): Promise<DeliveryResult> {
  const timeoutMs = Math.min(core.timings.timeoutMs, e.timeoutMs ?? Number.POSITIVE_INFINITY);
  const { degraded, storeError } = how;
  let reject: (reason: unknown) => void = () => {};
  const timedOut = new Promise<never>((_, r) => {
    reject = r;
  });
  const deadline = timeoutSignal(timeoutMs, () => {
    const error = new HandlerTimeoutError(timeoutMs);
    reject(error);
    return error;
  });
  const timed = e.run?.phase('handler');
  const { handler } = e;
  try {
    const value = await Promise.race([
      Promise.resolve().then(() =>
        handler(contextOf(e, delivery, new UnguardedContext(1, deadline.signal, e.key))),
      ),
      timedOut,
    ]);
    timed?.end();
    return done(how.outcome ?? 'processed', 200, {
      degraded,
      response: core.asResponse(value),
      error: storeError,
    });
  } catch (error) {
    timed?.end(error);
    return done('failed', 500, { degraded, code: failureCode(error), error, cause: storeError });
  } finally {
    deadline.dispose();
  }
}

/** An ignored delivery of an unsigned type: claimed and confirmed at once, nothing run. */
export async function remember(
  core: ReceiverCore,
  key: string,
  fingerprint: string,
  typeOnly: boolean,
  done: Done,
): Promise<DeliveryResult> {
  let result: Awaited<ReturnType<typeof runClaimed<undefined>>>;
  try {
    result = await runClaimed(core.store, key, () => undefined, core.engineOptions(fingerprint));
  } catch (cause) {
    return storeFailed(core, cause, done, (error) =>
      done('ignored', 200, { degraded: 'store-unavailable', error }),
    );
  }
  if (result.outcome === 'conflict') return core.conflict(done, typeOnly);
  if (result.outcome === 'duplicate') return done('duplicate', 200);
  if (result.outcome === 'processed' || result.outcome === 'failed')
    return done('ignored', 200, { degraded: result.degraded, cause: result.cause });
  return done('ignored', 200);
}
