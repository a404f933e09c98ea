import { ConfigError, StoreFullError } from '../errors.js';
import { newToken } from '../lease/crypto.js';
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
} from '../lease/types.js';

export interface MemoryStoreOptions {
  /**
   * Upper bound on remembered keys (leases plus completed keys). When full, the oldest completed
   * key is forgotten first, even inside its retention (a later retry of that event then runs
   * again: size this at least to events per retention window), then a lease that already ran out.
   * A live lease is never dropped: when every entry is a live lease, `claim` and `record` throw
   * {@link StoreFullError}, which the receiver treats as a store outage (fail-closed: 503 and the
   * provider retries later), and so does a `confirm` that must re-create a vanished record (the
   * engine reports it degraded `confirm-failed` and keeps trying while the lease lasts).
   * The ordering guard's versions are bounded separately by the same number, oldest forgotten
   * first: a forgotten entity accepts any version again.
   * @default 100_000
   */
  maxEntries?: number;
  /**
   * The clock, in ms since the epoch. The memory store is the only store that uses the caller's
   * clock, since it is the only one whose state lives in the caller's process.
   * @default Date.now
   */
  now?: () => number;
}

interface Entry {
  /** Owner token; kept after confirm so a repeated confirm by the same owner is recognised. */
  token: string;
  attempt: number;
  fingerprint: string | undefined;
  expiresAt: number;
  updatedAt: number;
}

/**
 * A store in this process's memory: for tests, development and single-process deployments.
 * Nothing is shared between processes and nothing survives a restart, so with several workers or
 * restarts use a shared store (Redis, PostgreSQL, MySQL, SQLite). It sets no timers: expired entries
 * are dropped when they are next touched or when room is needed.
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
  const now = options.now ?? Date.now;
  // Two insertion-ordered maps: the first entry of `completed` is always the oldest completion,
  // which makes "evict the oldest completed key first" O(1). A key lives in at most one of them.
  const processing = new Map<string, Entry>();
  // Completed keys are the bulk of a busy store, so each is packed into one one-byte string
  // (about 60 bytes instead of an object with three strings): see pack() below.
  const completed = new Map<string, string>();
  const versions = new Map<string, number>();

  function liveCompleted(key: string, at: number): Entry | undefined {
    const packed = completed.get(key);
    if (packed === undefined) return undefined;
    if (expiresAtOf(packed) <= at) {
      completed.delete(key);
      return undefined;
    }
    return unpack(packed);
  }

  function makeRoom(at: number): void {
    while (processing.size + completed.size >= maxEntries) {
      const oldest = completed.keys().next();
      if (!oldest.done) {
        completed.delete(oldest.value);
        continue;
      }
      let freed = false;
      for (const [key, entry] of processing) {
        if (entry.expiresAt <= at) {
          processing.delete(key);
          freed = true;
          break;
        }
      }
      if (!freed) throw new StoreFullError(maxEntries);
    }
  }

  function complete(key: string, entry: Entry, retentionMs: number, at: number): void {
    processing.delete(key);
    completed.delete(key);
    entry.expiresAt = at + retentionMs;
    entry.updatedAt = at;
    completed.set(key, pack(entry));
  }

  return {
    get size() {
      return processing.size + completed.size;
    },

    async claim(key: string, { leaseMs, fingerprint }: ClaimOptions): Promise<Claim> {
      const at = now();
      const done = liveCompleted(key, at);
      if (done)
        return { status: 'completed', sameFingerprint: sameFingerprint(done.fingerprint, fingerprint) };
      const held = processing.get(key);
      if (held && held.expiresAt > at) {
        return {
          status: 'in-flight',
          attempt: held.attempt,
          expiresAt: new Date(held.expiresAt),
          sameFingerprint: sameFingerprint(held.fingerprint, fingerprint),
        };
      }
      // Absent, or a lease that ran out: take it, raising the attempt over the last owner's.
      if (held) processing.delete(key);
      else makeRoom(at);
      const entry: Entry = {
        token: newToken(),
        attempt: (held?.attempt ?? 0) + 1,
        fingerprint,
        expiresAt: at + leaseMs,
        updatedAt: at,
      };
      processing.set(key, entry);
      return {
        status: 'acquired',
        lease: createLease({ key, ...entry, expiresAt: new Date(entry.expiresAt) }),
      };
    },

    async confirm(lease: Lease, { retentionMs }: { retentionMs: number }): Promise<boolean> {
      const at = now();
      const held = processing.get(lease.key);
      if (held) {
        if (held.token !== lease.token) return false;
        complete(lease.key, held, retentionMs, at);
        return true;
      }
      const done = liveCompleted(lease.key, at);
      if (done) {
        if (done.token !== lease.token) return false;
        complete(lease.key, done, retentionMs, at);
        return true;
      }
      // The record vanished (evicted or expired, nobody took over): the work is done, so write it
      // as completed; a later retry must see a duplicate.
      makeRoom(at);
      const entry: Entry = {
        token: lease.token,
        attempt: lease.attempt,
        fingerprint: lease.fingerprint,
        expiresAt: 0,
        updatedAt: at,
      };
      complete(lease.key, entry, retentionMs, at);
      return true;
    },

    async release(lease: Lease): Promise<boolean> {
      const held = processing.get(lease.key);
      if (!held || held.token !== lease.token) return false;
      processing.delete(lease.key);
      return true;
    },

    async extend(lease: Lease, { leaseMs }: { leaseMs: number }): Promise<boolean> {
      const held = processing.get(lease.key);
      if (!held || held.token !== lease.token) return false;
      const at = now();
      held.expiresAt = at + leaseMs;
      held.updatedAt = at;
      return true;
    },

    async record(key: string, { retentionMs, fingerprint }: RecordOptions): Promise<{ duplicate: boolean }> {
      const at = now();
      if (liveCompleted(key, at)) return { duplicate: true };
      const held = processing.get(key);
      if (held && held.expiresAt > at) return { duplicate: true };
      if (!held) makeRoom(at);
      const entry: Entry = {
        token: newToken(),
        attempt: (held?.attempt ?? 0) + 1,
        fingerprint,
        expiresAt: 0,
        updatedAt: at,
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
      const done = liveCompleted(key, at);
      const entry = done ?? processing.get(key);
      if (!entry) return undefined;
      return {
        key,
        state: done ? 'completed' : 'processing',
        attempt: entry.attempt,
        fingerprint: entry.fingerprint,
        expiresAt: new Date(entry.expiresAt),
        updatedAt: new Date(entry.updatedAt),
      };
    },

    async stats(): Promise<StoreStats> {
      const at = now();
      let live = 0;
      for (const entry of processing.values()) if (entry.expiresAt > at) live++;
      let done = 0;
      for (const packed of completed.values()) if (expiresAtOf(packed) > at) done++;
      return { processing: live, takeable: processing.size - live, completed: done };
    },

    async oldestLeases(limit: number): Promise<RecordView[]> {
      return [...processing]
        .sort(([, a], [, b]) => a.expiresAt - b.expiresAt)
        .slice(0, limit)
        .map(([key, entry]) => ({
          key,
          state: 'processing' as const,
          attempt: entry.attempt,
          fingerprint: entry.fingerprint,
          expiresAt: new Date(entry.expiresAt),
          updatedAt: new Date(entry.updatedAt),
        }));
    },

    async close(): Promise<void> {
      processing.clear();
      completed.clear();
      versions.clear();
    },
  };
}

// Packing of completed entries: one flat one-byte string of
//   expiresAt (6 bytes, 48-bit ms) · updatedAt (6) · attempt (4) · token field · fingerprint field
// where a field is 0x01 + length + the bytes of a lowercase hex value (half its size), 0x02 + 2-byte
// length + UTF-8 text otherwise, or 0x00 when absent. Built through a Buffer so the string is flat
// (concatenation would leave a rope of many small strings).
const HEX_FIELD = /^(?:[0-9a-f]{2}){1,255}$/;

function fieldBytes(value: string | undefined): Buffer {
  if (value === undefined) return Buffer.from([0]);
  if (HEX_FIELD.test(value)) {
    const raw = Buffer.from(value, 'hex');
    return Buffer.concat([Buffer.from([1, raw.length]), raw]);
  }
  const text = Buffer.from(value, 'utf8');
  const head = Buffer.alloc(3);
  head[0] = 2;
  head.writeUInt16BE(text.length, 1);
  return Buffer.concat([head, text]);
}

function pack(entry: Entry): string {
  const head = Buffer.alloc(16);
  head.writeUIntBE(entry.expiresAt, 0, 6);
  head.writeUIntBE(entry.updatedAt, 6, 6);
  head.writeUInt32BE(entry.attempt, 12);
  return Buffer.concat([head, fieldBytes(entry.token), fieldBytes(entry.fingerprint)]).toString('latin1');
}

function expiresAtOf(packed: string): number {
  let value = 0;
  for (let i = 0; i < 6; i++) value = value * 256 + packed.charCodeAt(i);
  return value;
}

function readField(buf: Buffer, at: number): [string | undefined, number] {
  const kind = buf[at];
  if (kind === 0) return [undefined, at + 1];
  if (kind === 1) {
    const n = buf[at + 1]!;
    return [buf.toString('hex', at + 2, at + 2 + n), at + 2 + n];
  }
  const n = buf.readUInt16BE(at + 1);
  return [buf.toString('utf8', at + 3, at + 3 + n), at + 3 + n];
}

function unpack(packed: string): Entry {
  const buf = Buffer.from(packed, 'latin1');
  const [token, next] = readField(buf, 16);
  const [fingerprint] = readField(buf, next);
  return {
    expiresAt: buf.readUIntBE(0, 6),
    updatedAt: buf.readUIntBE(6, 6),
    attempt: buf.readUInt32BE(12),
    token: token ?? '',
    fingerprint,
  };
}
