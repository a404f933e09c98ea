/**
 * Inbox mode's stage in place of the claim: the delivery is written durably under its key in one
 * atomic step and answered. Hybrid: written already leased to this request, which runs the handler
 * at once; done within the inline budget answers as inline mode does, else the entry is the
 * inbox's (the still-running handler keeps its lease, and its end is reported when it comes).
 */
import { newToken } from '../../core/crypto.js';
import type { InboxAccepted } from '../../core/inbox.js';
import { type TelemetryRun, TRACE_HEADER, timedPhase } from '../../core/telemetry.js';
import { later, leaseNow, withDeadline } from '../../core/timers.js';
import type { Lease } from '../../core/types.js';
import { stamped } from '../accepted-by.js';
import { headerPairs } from '../body.js';
import { type ReceiverCore, rejectionResult } from '../core.js';
import { type Done, doneFor, failureCode } from '../outcome.js';
import type { DeliveryResult } from '../result.js';
import type { Arrival, RawDelivery, Runnable } from '../work.js';
import { type EntryRun, entryState, runEntryOf, runResult } from './run-entry.js';
import { runUnguarded, storeFailed } from './settle.js';

/** Writes the event to the inbox (an `item` of a batch names its event), then answers or runs it. */
export async function acceptEntry(
  core: ReceiverCore,
  e: Runnable,
  source: Arrival,
  delivery: RawDelivery,
  done: Done,
  item?: string,
): Promise<DeliveryResult> {
  const box = core.inbox!;
  const p = core.policy!;
  const started = Date.now();
  // A delivery without a usable id is still kept durably, under a key of its own (never a duplicate).
  const key = e.key ?? `${core.space}:~unkeyed:${newToken()}`;
  const sentAt = leaseNow();
  // The headers kept with the entry, read before the store is asked: a name or value no HTTP
  // header can have (a plain-object header map passed to receive()) is a 400, not a store error.
  let kept: readonly (readonly [string, string])[];
  try {
    kept = stamped(
      e.run ? withCarrier(headerPairs(source.headers), e.run) : headerPairs(source.headers),
      core.provider.identity,
    );
  } catch (error) {
    return rejectionResult(core, error, started);
  }
  const claimMs = p.inlineMs === undefined ? undefined : core.timings.leaseMs;
  const writing = Promise.resolve().then(() =>
    timedPhase(e.run, 'accept', () =>
      box.accept(
        {
          key,
          fingerprint: e.fingerprint,
          receiver: core.space,
          type: e.type,
          id: e.id,
          item,
          body: source.bytes,
          headers: kept,
          url: source.url,
          receivedAt: source.receivedAt,
        },
        claimMs === undefined ? {} : { claimMs },
      ),
    ),
  );
  let accepted: InboxAccepted;
  try {
    accepted = await withDeadline('accept', core.timings.storeTimeoutMs, () => writing);
  } catch (cause) {
    handBackLate(core, writing);
    return storeFailed(core, cause, done, (error) =>
      runUnguarded(core, e, delivery, done, { degraded: 'store-unavailable', storeError: error }),
    );
  }
  if (accepted.status === 'conflict') return core.conflict(done, e.typeOnly);
  if (accepted.status === 'duplicate') return duplicate(core, key, accepted.state, done);
  if (!accepted.lease) return queued(core, key, done);
  // Hybrid: run now, answer at the budget whatever the state.
  return hybrid(core, { ...e, key }, delivery, accepted.lease, sentAt, started, done);
}

/**
 * An accept that lands after its deadline is durable all the same; a hybrid one leased to this
 * request is handed to the workers at once instead of waiting for its lease to run out.
 */
function handBackLate(core: ReceiverCore, writing: Promise<InboxAccepted>): void {
  writing
    .then(
      (late) =>
        late.status === 'accepted' && late.lease
          ? core.inbox!.retry(late.lease, { delayMs: 0, error: 'accepted after storeTimeout' })
          : undefined,
      () => undefined,
    )
    .catch(() => undefined);
}

/** Accepted and pending: the local workers are woken. */
function queued(core: ReceiverCore, key: string, done: Done): DeliveryResult {
  for (const wake of core.wakers) wake();
  return done('accepted', core.policy!.acceptedStatus, { key, inbox: { state: 'pending' } });
}

/**
 * The key is in the inbox already. The sender redelivering an entry that died (GitHub's
 * "Redeliver" button) is a retry by hand: the entry is requeued.
 */
async function duplicate(
  core: ReceiverCore,
  key: string,
  state: NonNullable<DeliveryResult['inbox']>['state'],
  done: Done,
): Promise<DeliveryResult> {
  if (state === 'dead') {
    const requeued = await withDeadline('requeue', core.timings.storeTimeoutMs, () =>
      core.inbox!.requeue({ key }),
    ).catch(() => 0);
    if (requeued > 0) return queued(core, key, done);
  }
  return done('duplicate', 200, { key, inbox: { state } });
}

/** Hybrid: the handler runs at once on the entry leased to this request, answered within the budget. */
async function hybrid(
  core: ReceiverCore,
  e: Runnable & { key: string },
  delivery: RawDelivery,
  lease: Lease,
  sentAt: number,
  started: number,
  done: Done,
): Promise<DeliveryResult> {
  const p = core.policy!;
  const running = runEntryOf(core, e, delivery, lease, sentAt, new Date());
  let budget: { cancel(): void } | undefined;
  const overBudget = new Promise<'over'>((resolve) => {
    budget = later(() => resolve('over'), p.inlineMs!, { unref: true });
  });
  const first = await Promise.race([running, overBudget]);
  budget?.cancel();
  if (first === 'over') {
    // Still running: the entry stays leased to this run; its end is reported when it comes.
    const detached = doneFor(core.known(e.key, e.id, e.type), started, core.report);
    running.then(
      (run) => runResult(core, run, detached),
      () => {},
    );
    return done('accepted', p.acceptedStatus, {
      key: e.key,
      attempt: 1,
      inbox: { state: 'processing', attempts: 1 },
    });
  }
  if (first.result.outcome === 'failed') return failedWithin(core, e.key, first, done);
  return runResult(core, first, done);
}

/** Failed within the budget: the inbox has it now (a retry after the backoff, or dead). */
function failedWithin(core: ReceiverCore, key: string, run: EntryRun, done: Done): DeliveryResult {
  const r = run.result as Extract<EntryRun['result'], { outcome: 'failed' }>;
  return done('accepted', core.policy!.acceptedStatus, {
    key,
    attempt: r.attempt,
    degraded: r.degraded,
    cause: r.cause,
    code: failureCode(r.error),
    error: r.error,
    inbox: entryState(run.end, r.attempt),
  });
}

/** The stored headers plus the accepting run's trace context, so the worker's run links back to it. */
function withCarrier(
  pairs: readonly (readonly [string, string])[],
  run: TelemetryRun,
): readonly (readonly [string, string])[] {
  const carried = run.carrier?.();
  if (!carried) return pairs;
  return [...pairs.filter(([name]) => name !== TRACE_HEADER), carried];
}
