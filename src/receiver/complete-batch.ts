/**
 * The completes of one receiver's runs, sent together where the store can (`inbox.completeMany`),
 * through the store calls' coalescer (core/coalesce.ts): a complete asked for while one call is out
 * goes with every complete asked for meanwhile, as one statement or script, at most 64 a call. Each
 * entry is still completed only under its own lease: the store checks every lease's token and
 * attempt as `complete` does.
 */
import { coalesce } from '../core/coalesce.js';
import type { InboxStore } from '../core/inbox.js';
import type { Lease } from '../core/types.js';

type CompleteOptions = Parameters<InboxStore['complete']>[1];

/**
 * `inbox.complete`, or where the store has `completeMany`, one that batches; a call out longer than
 * `storeTimeoutMs` no longer holds back the ones after it.
 */
export function batchedComplete(inbox: InboxStore, storeTimeoutMs: number): InboxStore['complete'] {
  if (typeof inbox.completeMany !== 'function') return (lease, options) => inbox.complete(lease, options);
  const complete = coalesce<[Lease, CompleteOptions], boolean>(
    async (items) => {
      const options = items[0]![1];
      if (items.length === 1) return [await inbox.complete(items[0]![0], options)];
      const done = await inbox.completeMany!(
        items.map(([lease]) => lease),
        options,
      );
      return items.map((_, i) => done[i] === true);
    },
    {
      most: 64,
      overdueMs: storeTimeoutMs,
      // One call carries completes of the same options only (one receiver's: always the same).
      together: ([, a], [, b]) => a.retentionMs === b.retentionMs && a.dropBody === b.dropBody,
    },
  );
  return (lease, options) => complete([lease, options]);
}
