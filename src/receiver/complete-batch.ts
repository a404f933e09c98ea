/**
 * The completes of one receiver's runs, sent together where the store can (`inbox.completeMany`):
 * a complete asked for while others are out waits for one of them to land, then goes with every
 * complete asked for meanwhile, as one statement or script. So a lone complete is sent at once, and
 * under load the round trips (and, on PostgreSQL, the commits) are shared. Each entry is still
 * completed only under its own lease: the store checks every lease's token and attempt as
 * `complete` does.
 */
import type { InboxStore } from '../core/inbox.js';
import type { Lease } from '../core/types.js';

type CompleteOptions = Parameters<InboxStore['complete']>[1];

/** Calls of the store sent at once, and the most leases one carries. */
const IN_FLIGHT = 2;
const MAX_BATCH = 64;

interface Waiting {
  readonly lease: Lease;
  readonly options: CompleteOptions;
  readonly resolve: (done: boolean) => void;
  readonly reject: (error: unknown) => void;
}

/** `inbox.complete`, or where the store has `completeMany`, one that batches. */
export function batchedComplete(inbox: InboxStore): InboxStore['complete'] {
  if (typeof inbox.completeMany !== 'function') return (lease, options) => inbox.complete(lease, options);
  const queue: Waiting[] = [];
  let out = 0;
  const send = async (batch: Waiting[]) => {
    out++;
    try {
      const { options } = batch[0]!;
      const done =
        batch.length === 1
          ? [await inbox.complete(batch[0]!.lease, options)]
          : await inbox.completeMany!(
              batch.map((w) => w.lease),
              options,
            );
      for (const [i, w] of batch.entries()) w.resolve(done[i] === true);
    } catch (error) {
      for (const w of batch) w.reject(error);
    } finally {
      out--;
      flush();
    }
  };
  const flush = () => {
    while (out < IN_FLIGHT && queue.length > 0) {
      // One call carries completes of the same options only (one receiver's: always the same).
      const { options } = queue[0]!;
      const batch: Waiting[] = [];
      for (let i = 0; i < queue.length && batch.length < MAX_BATCH; ) {
        const w = queue[i]!;
        if (w.options.retentionMs === options.retentionMs && w.options.dropBody === options.dropBody) {
          batch.push(w);
          queue.splice(i, 1);
        } else i++;
      }
      void send(batch);
    }
  };
  return (lease, options) =>
    new Promise<boolean>((resolve, reject) => {
      queue.push({ lease, options, resolve, reject });
      flush();
    });
}
