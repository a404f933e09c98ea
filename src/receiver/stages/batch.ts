/**
 * A delivery carrying several events (SendGrid): each is claimed, run and confirmed on its own key
 * (or, in inbox mode, accepted on its own key), in order, and reported to `onOutcome` on its own, so
 * a batch that partly failed re-runs only what failed when it comes back. The answer is the batch's
 * worst outcome (503, then 500, then 409, then 422), else 200; with the store down the rest of the
 * batch is left for the retry.
 */
import { sha256Hex } from '../../core/crypto.js';
import { idKey } from '../../core/keys.js';
import { VerificationError } from '../../errors.js';
import type { BatchItem } from '../../providers/types.js';
import type { ReceiverCore } from '../core.js';
import { batchResult, doneFor, rejection } from '../outcome.js';
import type { DeliveryResult } from '../result.js';
import type { Arrival, RawDelivery } from '../work.js';
import { acceptEntry } from './accept.js';
import { settle } from './settle.js';

export async function runBatch(
  core: ReceiverCore,
  items: readonly BatchItem<unknown>[],
  delivery: RawDelivery,
  source: Arrival,
): Promise<DeliveryResult> {
  const { started } = source;
  const results: DeliveryResult[] = [];
  for (const item of items) {
    const key = idKey(core.space, item.id);
    const done = doneFor(core.known(key, item.id, item.type), started, core.report);
    const handler = core.pickHandler(item.type);
    let fingerprint: string;
    try {
      // The event's own content: one event of a batch has no bytes of its own.
      fingerprint = sha256Hex(JSON.stringify(item.event));
    } catch (error) {
      // Nested too deep to serialise (a hostile but signed body): refused like any invalid body.
      return rejection(
        new VerificationError('invalid_body', 'onceonly: an event of the batch is nested too deeply', {
          cause: error,
        }),
        doneFor(core.known(), started, core.report),
      );
    }
    let result: DeliveryResult;
    if (!handler) result = done('ignored', 200, { key: undefined });
    else {
      const runnable = {
        handler,
        event: item.event,
        type: item.type,
        id: item.id,
        key,
        fingerprint,
        run: source.run,
        timeoutMs: source.timeoutMs,
      };
      result = core.policy
        ? await acceptEntry(core, runnable, source, delivery, done, item.id)
        : await settle(core, runnable, delivery, done);
    }
    results.push(result);
    if (result.outcome === 'store-unavailable') break;
  }
  return batchResult(results, Date.now() - started);
}
