/**
 * One run of an inbox entry under its lease (a worker's, or a hybrid delivery's run at once), and
 * its result: completed, retried after the backoff, or dead.
 */
import type { Lease } from '../../core/types.js';
import type { ReceiverCore } from '../core.js';
import { type InboxRunEnd, runEntry } from '../inbox.js';
import type { Done } from '../outcome.js';
import type { DeliveryResult } from '../result.js';
import type { RawDelivery, Runnable } from '../work.js';
import { contextOf, ran } from './settle.js';

export type EntryRun = Awaited<ReturnType<typeof runEntry>>;

/** Runs the handler on an entry leased at `sentAt` (on `leaseNow()`'s clock), then settles the entry. */
export function runEntryOf(
  core: ReceiverCore,
  e: Runnable,
  delivery: RawDelivery,
  lease: Lease,
  sentAt: number,
  acceptedAt: Date,
  handlerEnded?: () => void,
): Promise<EntryRun> {
  const { timings } = core;
  // Called as a plain function: `this` is undefined, never the record.
  const { handler } = e;
  return runEntry(core.inbox!, lease, sentAt, acceptedAt, (work) => handler(contextOf(e, delivery, work)), {
    policy: core.policy!,
    retentionMs: core.retentionMs,
    leaseMs: timings.leaseMs,
    timeoutMs: Math.min(timings.timeoutMs, e.timeoutMs ?? Number.POSITIVE_INFINITY),
    storeTimeoutMs: timings.storeTimeoutMs,
    telemetry: e.run,
    handlerEnded,
    complete: core.complete,
  });
}

/** What the result says of the entry after a run: its state, attempts and next attempt. */
export function entryState(
  end: InboxRunEnd | undefined,
  attempts: number | undefined,
): DeliveryResult['inbox'] {
  return end === undefined || end.state === 'lost'
    ? undefined
    : {
        state: end.state,
        attempts,
        nextAttemptAt: end.state === 'pending' ? end.nextAttemptAt : undefined,
      };
}

/** The result of one run of an entry (a worker's, or a hybrid run past its budget). */
export function runResult(core: ReceiverCore, run: EntryRun, done: Done): DeliveryResult {
  const { result, end } = run;
  if (result.outcome !== 'processed' && result.outcome !== 'lease-lost' && result.outcome !== 'failed') {
    // runLeased only ends in processed, lease-lost or failed.
    return done('failed', 500, { code: 'internal_error' });
  }
  const attempts = 'attempt' in result ? result.attempt : undefined;
  return ran(core, result, done, { inbox: entryState(end, attempts), dead: end?.state === 'dead' });
}
