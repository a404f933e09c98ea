import type { InboxStore } from '../core/inbox.js';
import { markKind } from '../core/telemetry.js';
import { markSettlesInline } from '../core/timers.js';
import type { ClaimOptions, Lease, RecordOptions, Store, StoreAdmin } from '../core/types.js';
import { ConfigError } from '../errors.js';
import { MemoryClaims } from './memory/claims.js';
import { memoryInbox } from './memory/inbox.js';

export interface MemoryStoreOptions {
  /**
   * Upper bound on remembered keys: leases, released and run-out records, and completed keys.
   * To make room the store only ever forgets entries whose time is over: completed keys past their
   * retention, and released or run-out records past their lease's end plus the claim's `retentionMs`
   * (1 hour when the claim gives none). It never forgets a completed key inside its retention (a
   * retry would run the event again) nor a takeable record inside its retention (its attempt, the
   * fencing number, would go back), and never a live lease. When nothing can be forgotten, `claim`
   * and `record` of a new key throw {@link StoreFullError}, which the receiver treats as a store
   * outage (fail-closed: 503 and the provider retries later), and so does a `confirm` that must
   * re-create a vanished record (the engine reports it degraded `confirm-failed` and keeps trying
   * while the lease lasts). Size it at least to the keys one retention window brings.
   * The ordering guard's versions are bounded separately by the same number, oldest forgotten
   * first: a forgotten entity accepts any version again. So are the inbox's entries (pending,
   * running, dead, and completed within their retention): past it an inbox `accept` throws
   * {@link StoreFullError} too (503 `store_full`, the sender retries), after forgetting the
   * completed entries whose retention ran out.
   * @default 100_000
   */
  maxEntries?: number;
  /**
   * Upper bound on the bytes the inbox's entries hold (bodies, headers and URLs, as received):
   * past it an inbox `accept` throws {@link StoreFullError} (503 `store_full`). A completed entry's
   * bytes are freed at once with the inbox's `dropBody`, else once its retention ran out.
   * @default 268_435_456 (256 MiB)
   */
  maxInboxBytes?: number;
  /**
   * The clock, in ms since the epoch. The memory store is the only store that uses the caller's
   * clock, since it is the only one whose state lives in the caller's process.
   * @default Date.now
   */
  now?: () => number;
}

/**
 * A store in this process's memory: for tests, development and single-process deployments.
 * Nothing is shared between processes and nothing survives a restart, so with several workers or
 * restarts use a shared store (Redis, PostgreSQL, MySQL, SQLite). It sets no timers: expired entries
 * are dropped when they are next touched or when room is needed.
 *
 * A released record (the handler failed) and a lease that ran out (the process died) are kept,
 * takeable, with their attempt and fingerprint, for the claim's `retentionMs` after the lease's end
 * (1 hour when the claim gives none), so the retry gets attempt + 1; past that they are forgotten.
 * Each costs one entry, like the lease it was: about 330 bytes of heap with a Stripe event id and a
 * SHA-256 fingerprint in hex, against about 195 for a completed key, which is packed into one string
 * and kept for its retention (measured on Node 20).
 *
 * @example
 * const store = memoryStore({ maxEntries: 50_000 });
 */
export function memoryStore(
  options: MemoryStoreOptions = {},
): Store & StoreAdmin & { readonly size: number } {
  const maxEntries = options.maxEntries ?? 100_000;
  if (!Number.isInteger(maxEntries) || maxEntries < 1) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: memoryStore maxEntries must be a positive integer, got ${maxEntries}`,
    );
  }
  const maxInboxBytes = options.maxInboxBytes ?? 256 * 1024 * 1024;
  if (!Number.isSafeInteger(maxInboxBytes) || maxInboxBytes < 1) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: memoryStore maxInboxBytes must be a positive integer, got ${maxInboxBytes}`,
    );
  }
  const now = options.now ?? Date.now;
  const claims = new MemoryClaims({ maxEntries, now });
  const inbox: InboxStore = memoryInbox(now, { maxEntries, maxBytes: maxInboxBytes });

  // Every call does its work before it returns: no store-call deadline is needed (or set).
  return markSettlesInline(
    markKind('memory', {
      inbox,
      get size() {
        return claims.size;
      },
      claim: (key: string, claimOptions: ClaimOptions) => claims.claim(key, claimOptions),
      confirm: (lease: Lease, confirmOptions: { retentionMs: number }) =>
        claims.confirm(lease, confirmOptions),
      release: (lease: Lease) => claims.release(lease),
      extend: (lease: Lease, extendOptions: { leaseMs: number }) => claims.extend(lease, extendOptions),
      record: (key: string, recordOptions: RecordOptions) => claims.record(key, recordOptions),
      advance: (entity: string, version: number) => claims.advance(entity, version),
      inspect: (key: string) => claims.inspect(key),
      steps: {
        load: (lease: Lease) => claims.loadSteps(lease),
        save: (lease: Lease, name: string, value: string) => claims.saveStep(lease, name, value),
      },
      stats: () => claims.stats(),
      oldestLeases: (limit: number) => claims.oldestLeases(limit),
      close: () => claims.close(),
    }),
  );
}
