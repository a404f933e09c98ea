/**
 * A worker's run of one taken entry: re-verified from what the inbox kept (timestamp tolerance
 * measured from when it arrived), routed by type, run under its lease; then completed, retried after
 * the backoff, or buried. An entry that can never run (damaged, no longer verifying, no handler, its
 * attempts spent by runs that died) is buried: kept, dead, reported, for an operator. One accepted by
 * another app under this receiver's name is left to that app's workers.
 */
import type { InboxJob } from '../../core/inbox.js';
import { causeOf } from '../../core/logger.js';
import type { TelemetryRun } from '../../core/telemetry.js';
import { withDeadline } from '../../core/timers.js';
import { OnceonlyError } from '../../errors.js';
import type { Verified } from '../../providers/types.js';
import { unstamped } from '../accepted-by.js';
import { toHeaderReader } from '../body.js';
import type { ReceiverCore } from '../core.js';
import { Delivery } from '../delivery.js';
import { type Done, doneFor } from '../outcome.js';
import type { DeliveryResult } from '../result.js';
import { isPromise } from '../work.js';
import { runEntryOf, runResult } from './run-entry.js';

/**
 * Runs one entry taken at `takenAt` (on `leaseNow()`'s clock): its outcome, reported.
 * `handlerEnded` is called once its handler has ended, as the entry's complete (retry, burial) is
 * sent: the worker's slot is free from then.
 */
export async function runJob(
  core: ReceiverCore,
  job: InboxJob,
  takenAt: number,
  tracing?: TelemetryRun,
  handlerEnded?: () => void,
): Promise<DeliveryResult> {
  const done = doneFor(core.known(job.key, job.id, job.type), Date.now(), core.report);
  const { maxAttempts } = core.policy!;
  // Changed or damaged in the store: it can never run. Kept, dead, reported, for an operator.
  if (job.unreadable !== undefined) return bury(core, job, done, new Error(job.unreadable), 'unreadable');
  // Its last run ended without a verdict (its process died, or it stalled past its lease), and
  // that was its last attempt: an event that kills whatever runs it ends dead, not in a crash loop.
  if (job.takenOver && job.lease.attempt > maxAttempts) {
    return bury(
      core,
      job,
      done,
      new Error(
        `its run at attempt ${job.lease.attempt - 1} ended without a verdict (its process died, or it stalled past its lease) and its ${maxAttempts} attempts are spent`,
      ),
      'attempts spent',
    );
  }
  let verified: Verified<unknown>;
  const { identity: acceptedBy, headers: kept } = unstamped(job.headers);
  const headers = toHeaderReader(kept);
  try {
    const pending = core.provider.verify({
      rawBody: job.body,
      headers,
      url: job.url,
      receivedAt: job.receivedAt,
    });
    verified = isPromise(pending) ? await pending : pending;
  } catch (error) {
    return unverified(core, job, done, error, acceptedBy);
  }
  let event = verified.event;
  let type = verified.type;
  if (job.item !== undefined) {
    const item = verified.batch?.find((i) => i.id === job.item);
    if (!item) return bury(core, job, done, new Error(`the batch holds no event ${job.item}`), 'unrunnable');
    event = item.event;
    type = item.type;
  }
  const handler = core.pickHandler(type);
  if (!handler) {
    return bury(
      core,
      job,
      done,
      new Error(`no handler for type ${JSON.stringify(type ?? null)}`),
      'unrunnable',
    );
  }
  const delivery = new Delivery(job.body, job.receivedAt, headers);
  const runnable = {
    handler,
    event,
    type,
    id: job.id,
    key: job.key,
    fingerprint: job.fingerprint,
    run: tracing,
  };
  // The lease was taken when take() was sent; a conservative start for its bound.
  const run = await runEntryOf(core, runnable, delivery, job.lease, takenAt, job.acceptedAt, handlerEnded);
  return runResult(core, run, done);
}

/**
 * An entry that no longer verifies. Accepted by another app under this receiver name, with other
 * secrets: not ours to run. Left, due again after a backoff, for that app's workers, and the clash
 * reported; buried only once its attempts are spent with none of them run (the other app gone, or
 * the secret rotated out), so it ends visible, never retried for ever. Otherwise the secret it was
 * signed with is gone (rotated out before the inbox drained), or the entry was changed in the
 * store: it can never run.
 */
function unverified(
  core: ReceiverCore,
  job: InboxJob,
  done: Done,
  error: unknown,
  acceptedBy: string | undefined,
): Promise<DeliveryResult> {
  const { maxAttempts } = core.policy!;
  if (acceptedBy !== undefined && acceptedBy !== core.provider.identity) {
    if (job.lease.attempt < maxAttempts) return leave(core, job, done, error, acceptedBy);
    core.clashes.seen(acceptedBy);
    return bury(
      core,
      job,
      done,
      error,
      `accepted by another receiver (identity ${acceptedBy}) and no longer verifies here; its ${maxAttempts} attempts are spent`,
    );
  }
  return bury(core, job, done, error, 'no longer verifies');
}

/** Buries the entry (kept, dead) with why it can never run. */
async function bury(
  core: ReceiverCore,
  job: InboxJob,
  done: Done,
  error: unknown,
  why: string,
): Promise<DeliveryResult> {
  const buried = await withDeadline('bury', core.timings.storeTimeoutMs, () =>
    core.inbox!.bury(job.lease, { error: `${why}: ${causeOf(error)}` }),
  ).catch(() => false);
  const code = error instanceof OnceonlyError ? error.code : 'inbox_unrunnable';
  // A bury that did not land (the lease was lost, or the store failed) leaves the entry where it
  // was: reported failed, as a retry that did not land is, never dead when it is not.
  if (!buried) return done('failed', 500, { attempt: job.lease.attempt, code, error });
  return done('dead', 500, {
    attempt: job.lease.attempt,
    code,
    error,
    inbox: { state: 'dead', attempts: job.lease.attempt },
  });
}

/** Leaves another app's entry for its workers: due again after the first backoff, the clash reported. */
async function leave(
  core: ReceiverCore,
  job: InboxJob,
  done: Done,
  error: unknown,
  other: string,
): Promise<DeliveryResult> {
  core.clashes.seen(other);
  const delayMs = core.policy!.backoff(1);
  const left = await withDeadline('retry', core.timings.storeTimeoutMs, () =>
    core.inbox!.retry(job.lease, {
      delayMs,
      error: `left for the receiver that accepted it (identity ${other}), whose secrets this one lacks: ${causeOf(error)}`,
    }),
  ).catch(() => false);
  return done('conflict', 409, {
    attempt: job.lease.attempt,
    code: 'receiver_clash',
    error,
    inbox: left ? { state: 'pending', nextAttemptAt: new Date(Date.now() + delayMs) } : undefined,
  });
}
