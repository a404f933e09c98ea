import { newToken } from '../core/crypto.js';
import type { InboxStore } from '../core/inbox.js';
import { markKind } from '../core/telemetry.js';
import { markSettlesInline } from '../core/timers.js';
import {
  assertVersion,
  type Claim,
  type ClaimOptions,
  createLease,
  type Lease,
  type RecordOptions,
  type RecordView,
  type Store,
  type StoreAdmin,
  type StoreStats,
  sameFingerprint,
} from '../core/types.js';
import { ConfigError, StoreFullError } from '../errors.js';
import { ExpiryQueue } from './memory/expiry.js';
import { memoryInbox } from './memory/inbox.js';
import { type Entry, expiresAtOf, pack, packedFingerprintIs, unpack } from './memory/packed.js';

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

/** How long a released or run-out record is kept after its lease's end when the claim gives no `retentionMs`. */
const DEFAULT_GRACE_MS = 3_600_000;

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
  // Every key's record in one map, so a claim or a confirm looks its key up once: an Entry for a
  // lease or a released or run-out record; a string for a completed key. Completed keys are the bulk
  // of a busy store, so each is packed into one one-byte string (about 60 bytes instead of an object
  // with three strings): see memory/packed.ts.
  const records = new Map<string, Entry | string>();
  const versions = new Map<string, number>();
  // When each entry may be forgotten, soonest first, so that making room never scans the maps.
  const expiries = new ExpiryQueue();

  /** When a record's time is over: a completed key's retention, a takeable record's grace. */
  const dropAtOf = (record: Entry | string) =>
    typeof record === 'string' ? expiresAtOf(record) : record.expiresAt + record.graceMs;

  function schedule(key: string, at: number): void {
    expiries.push(at, key);
    // Every write adds an item and rewrites leave stale ones behind: rebuild from the maps now and
    // then, which keeps the queue within twice the entries (amortised O(1) per write).
    if (expiries.size > 2 * records.size + 1024) {
      expiries.clear();
      for (const [k, record] of records) expiries.push(dropAtOf(record), k);
    }
  }

  /**
   * A key's record while its time lasts: a completed key inside its retention (packed), a lease, or
   * a released or run-out record inside its grace. Past that the key is forgotten, here and now.
   */
  function recordOf(key: string, at: number): Entry | string | undefined {
    const record = records.get(key);
    if (record === undefined) return undefined;
    if (dropAtOf(record) <= at) {
      records.delete(key);
      return undefined;
    }
    return record;
  }

  const isLive = (entry: Entry, at: number) => entry.token !== '' && entry.expiresAt > at;

  /** The lease's record while it is still this owner's (not released, completed or taken over). */
  function leaseOf(lease: Lease, at: number): Entry | undefined {
    const held = recordOf(lease.key, at);
    if (held === undefined || typeof held === 'string' || lease.token === '' || held.token !== lease.token)
      return undefined;
    return held;
  }

  /**
   * Forgets entries whose time is over, soonest first, until there is room for one more. Never an
   * entry inside its retention or grace: when none is over, the store is full.
   */
  function makeRoom(at: number): void {
    while (records.size >= maxEntries) {
      const next = expiries.peekTime();
      if (next === undefined || next > at) throw new StoreFullError(maxEntries);
      const key = expiries.pop();
      // The queue may hold stale times of a key rewritten since: only its current time counts.
      const record = records.get(key);
      if (record !== undefined && dropAtOf(record) === next) records.delete(key);
    }
  }

  function complete(key: string, entry: Entry, retentionMs: number, at: number): void {
    // Whole ms, as packed: the expiry queue finds the record by its time, which must be the one the
    // packed string gives back (a clock that reads fractions, performance.timeOrigin + now, would
    // never match). Packed before anything changes: a time the packing cannot hold (outside 0 to
    // 2^48 ms) throws with the record as it was (a lease that runs out and can be taken over), not
    // a lease stretched to the retention.
    const expiresAt = Math.floor(at + retentionMs);
    const packed = pack(entry, expiresAt, Math.floor(at));
    // set() replaces the key's lease (or earlier completion) in place.
    records.set(key, packed);
    schedule(key, expiresAt);
  }

  function view(key: string, entry: Entry, state: RecordView['state']): RecordView {
    return {
      key,
      state,
      attempt: entry.attempt,
      fingerprint: entry.fingerprint,
      expiresAt: new Date(entry.expiresAt),
      updatedAt: new Date(entry.updatedAt),
    };
  }

  const inbox: InboxStore = memoryInbox(now, { maxEntries, maxBytes: maxInboxBytes });

  // Every call does its work before it returns: no store-call deadline is needed (or set).
  return markSettlesInline(
    markKind('memory', {
      inbox,

      get size() {
        return records.size;
      },

      async claim(key: string, { leaseMs, fingerprint, retentionMs }: ClaimOptions): Promise<Claim> {
        const at = now();
        const record = recordOf(key, at);
        if (typeof record === 'string')
          return { status: 'completed', sameFingerprint: packedFingerprintIs(record, fingerprint) };
        const held = record;
        if (held && (isLive(held, at) || !sameFingerprint(held.fingerprint, fingerprint))) {
          // A live owner; or a released or run-out record of another body, which keeps its
          // fingerprint: the same key with another fingerprint is a conflict, never a takeover.
          return {
            status: 'in-flight',
            attempt: held.attempt,
            expiresAt: new Date(held.expiresAt),
            sameFingerprint: sameFingerprint(held.fingerprint, fingerprint),
          };
        }
        // Absent, released, or a lease that ran out: take it, raising the attempt over the last owner's.
        if (!held) makeRoom(at);
        const entry: Entry = held ?? {
          token: '',
          attempt: 0,
          fingerprint,
          expiresAt: 0,
          updatedAt: 0,
          graceMs: 0,
        };
        entry.token = newToken();
        entry.attempt += 1;
        entry.fingerprint = fingerprint;
        entry.expiresAt = at + leaseMs;
        entry.updatedAt = at;
        entry.graceMs = retentionMs ?? DEFAULT_GRACE_MS;
        if (!held) records.set(key, entry);
        schedule(key, dropAtOf(entry));
        return {
          status: 'acquired',
          lease: createLease({
            key,
            token: entry.token,
            attempt: entry.attempt,
            fingerprint,
            expiresAt: new Date(entry.expiresAt),
          }),
        };
      },

      async confirm(lease: Lease, { retentionMs }: { retentionMs: number }): Promise<boolean> {
        // No real token is empty: '' marks a released record, which nobody owns.
        if (lease.token === '') return false;
        const at = now();
        const record = recordOf(lease.key, at);
        if (record !== undefined) {
          // A lease or a released or run-out record; or completed already (a repeated confirm).
          const held = typeof record === 'string' ? unpack(record) : record;
          if (held.token !== lease.token) return false;
          complete(lease.key, held, retentionMs, at);
          return true;
        }
        // The record vanished (its lease ran out and its grace passed, nobody took over): the work is
        // done, so write it as completed; a later retry must see a duplicate.
        makeRoom(at);
        const entry: Entry = {
          token: lease.token,
          attempt: lease.attempt,
          fingerprint: lease.fingerprint,
          expiresAt: 0,
          updatedAt: at,
          graceMs: 0,
        };
        complete(lease.key, entry, retentionMs, at);
        return true;
      },

      async release(lease: Lease): Promise<boolean> {
        const at = now();
        const held = leaseOf(lease, at);
        if (!held) return false;
        // Released: nobody owns it, takeable at once, attempt and fingerprint kept for its grace.
        held.token = '';
        held.expiresAt = at;
        held.updatedAt = at;
        schedule(lease.key, dropAtOf(held));
        return true;
      },

      async extend(lease: Lease, { leaseMs }: { leaseMs: number }): Promise<boolean> {
        const at = now();
        const held = leaseOf(lease, at);
        if (!held) return false;
        held.expiresAt = at + leaseMs;
        held.updatedAt = at;
        schedule(lease.key, dropAtOf(held));
        return true;
      },

      async record(
        key: string,
        { retentionMs, fingerprint }: RecordOptions,
      ): Promise<{ duplicate: boolean }> {
        const at = now();
        const held = recordOf(key, at);
        if (typeof held === 'string') return { duplicate: true };
        // A live lease, or a takeable record of another body (it keeps its fingerprint), is a duplicate.
        if (held && (isLive(held, at) || !sameFingerprint(held.fingerprint, fingerprint)))
          return { duplicate: true };
        if (!held) makeRoom(at);
        const entry: Entry = {
          token: newToken(),
          attempt: (held?.attempt ?? 0) + 1,
          fingerprint,
          expiresAt: 0,
          updatedAt: at,
          graceMs: 0,
        };
        complete(key, entry, retentionMs, at);
        return { duplicate: false };
      },

      async advance(entity: string, version: number): Promise<boolean> {
        assertVersion(version);
        const current = versions.get(entity);
        if (current !== undefined && version <= current) return false;
        versions.delete(entity);
        if (versions.size >= maxEntries) {
          const oldest = versions.keys().next();
          if (!oldest.done) versions.delete(oldest.value);
        }
        versions.set(entity, version);
        return true;
      },

      async inspect(key: string): Promise<RecordView | undefined> {
        const at = now();
        const record = recordOf(key, at);
        if (record === undefined) return undefined;
        if (typeof record === 'string') return view(key, unpack(record), 'completed');
        return view(key, record, record.token === '' ? 'released' : 'processing');
      },

      async stats(): Promise<StoreStats> {
        const at = now();
        let live = 0;
        let takeable = 0;
        let done = 0;
        for (const record of records.values()) {
          if (typeof record === 'string') {
            if (expiresAtOf(record) > at) done++;
          } else if (isLive(record, at)) live++;
          else if (dropAtOf(record) > at) takeable++;
        }
        return { processing: live, takeable, completed: done };
      },

      async oldestLeases(limit: number): Promise<RecordView[]> {
        const at = now();
        const held: [string, Entry][] = [];
        for (const [key, record] of records)
          if (typeof record !== 'string' && dropAtOf(record) > at) held.push([key, record]);
        return held
          .sort(([, a], [, b]) => a.expiresAt - b.expiresAt)
          .slice(0, limit)
          .map(([key, entry]) => view(key, entry, entry.token === '' ? 'released' : 'processing'));
      },

      async close(): Promise<void> {
        records.clear();
        versions.clear();
        expiries.clear();
      },
    }),
  );
}
