/**
 * Calls of one kind to a store, sent together where the store can take many in one command: a call
 * asked for while one is out waits for it to land, then goes with every call asked for meanwhile.
 * So a lone call is sent at once, and under load the round trips (and the store's per-command cost)
 * are shared. One call out at a time, not two: the batches come out twice as large for at most one
 * more round trip of wait. A call still out past `overdueMs` (the store deadline: its callers have
 * given up on it by then) stops counting as out, so one that never lands holds back nothing after
 * it. Used by the inbox's completes (receiver/complete-batch.ts) and the SQL stores' accepts
 * (stores/sql/inbox-writes.ts, with a shorter bound of their own).
 */
import { later } from './timers.js';

interface Waiting<I, R> {
  readonly item: I;
  readonly resolve: (result: R) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * `send` gets the items of one batch (at most `most`) and answers each in order; it rejecting
 * rejects every item of the batch. `together` tells which queued items may share a batch with the
 * first one waiting (default: any).
 */
export function coalesce<I, R>(
  send: (items: I[]) => Promise<R[]>,
  options: { most: number; overdueMs: number; together?: (first: I, other: I) => boolean },
): (item: I) => Promise<R> {
  const queue: Waiting<I, R>[] = [];
  const together = options.together ?? (() => true);
  let out = 0;
  const go = async (batch: Waiting<I, R>[]) => {
    out++;
    let counted = true;
    const uncount = () => {
      if (!counted) return;
      counted = false;
      out--;
      flush();
    };
    const overdue = later(uncount, options.overdueMs, { unref: true });
    try {
      const results = await send(batch.map((w) => w.item));
      for (const [i, w] of batch.entries()) w.resolve(results[i]!);
    } catch (error) {
      for (const w of batch) w.reject(error);
    } finally {
      overdue.cancel();
      uncount();
    }
  };
  const flush = () => {
    while (out < 1 && queue.length > 0) {
      const first = queue[0]!.item;
      const batch: Waiting<I, R>[] = [];
      for (let i = 0; i < queue.length && batch.length < options.most; ) {
        if (together(first, queue[i]!.item)) batch.push(...queue.splice(i, 1));
        else i++;
      }
      void go(batch);
    }
  };
  return (item) =>
    new Promise<R>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      flush();
    });
}
