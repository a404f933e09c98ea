/**
 * The memory store's claims: leases, released and run-out records, completed keys, and the ordering
 * guard's versions, all in this process's memory (see memoryStore for what it keeps and forgets).
 */
import { newToken } from '../../core/crypto.js';
import {
  assertVersion,
  type Claim,
  type ClaimOptions,
  createLease,
  type Lease,
  type RecordOptions,
  type RecordView,
  type StoreStats,
  sameFingerprint,
} from '../../core/types.js';
import { StoreFullError } from '../../errors.js';
import { ExpiryQueue } from './expiry.js';
import { type Entry, expiresAtOf, pack, packedFingerprintIs, unpack } from './packed.js';

const EMPTY_STEPS: ReadonlyMap<string, string> = new Map();

/** How long a released or run-out record is kept after its lease's end when the claim gives no `retentionMs`. */
const DEFAULT_GRACE_MS = 3_600_000;

export interface MemoryClaimsOptions {
  /** Upper bound on remembered keys, and separately on the ordering guard's versions. */
  maxEntries: number;
  /** The clock, in ms since the epoch. */
  now: () => number;
}

/** When a record's time is over: a completed key's retention, a takeable record's grace. */
const dropAtOf = (record: Entry | string) =>
  typeof record === 'string' ? expiresAtOf(record) : record.expiresAt + record.graceMs;

const isLive = (entry: Entry, at: number) => entry.token !== '' && entry.expiresAt > at;

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

/** The memory store's claims and records: every call does its work before it returns. */
export class MemoryClaims {
  // Every key's record in one map, so a claim or a confirm looks its key up once: an Entry for a
  // lease or a released or run-out record; a string for a completed key. Completed keys are the bulk
  // of a busy store, so each is packed into one one-byte string (about 60 bytes instead of an object
  // with three strings): see memory/packed.ts.
  private readonly records = new Map<string, Entry | string>();
  private readonly versions = new Map<string, number>();
  // When each entry may be forgotten, soonest first, so that making room never scans the maps.
  private readonly expiries = new ExpiryQueue();
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(options: MemoryClaimsOptions) {
    this.maxEntries = options.maxEntries;
    this.now = options.now;
  }

  get size(): number {
    return this.records.size;
  }

  /** The clock's reading; the clock is called as a plain function, never as a method of this. */
  private time(): number {
    return this.now.call(undefined);
  }

  private schedule(key: string, at: number): void {
    const { expiries, records } = this;
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
  private recordOf(key: string, at: number): Entry | string | undefined {
    const record = this.records.get(key);
    if (record === undefined) return undefined;
    if (dropAtOf(record) <= at) {
      this.records.delete(key);
      return undefined;
    }
    return record;
  }

  /** The lease's record while it is still this owner's (not released, completed or taken over). */
  private leaseOf(lease: Lease, at: number): Entry | undefined {
    const held = this.recordOf(lease.key, at);
    if (held === undefined || typeof held === 'string' || lease.token === '' || held.token !== lease.token)
      return undefined;
    return held;
  }

  /**
   * Forgets entries whose time is over, soonest first, until there is room for one more. Never an
   * entry inside its retention or grace: when none is over, the store is full.
   */
  private makeRoom(at: number): void {
    const { expiries, records, maxEntries } = this;
    while (records.size >= maxEntries) {
      const next = expiries.peekTime();
      if (next === undefined || next > at) throw new StoreFullError(maxEntries);
      const key = expiries.pop();
      // The queue may hold stale times of a key rewritten since: only its current time counts.
      const record = records.get(key);
      if (record !== undefined && dropAtOf(record) === next) records.delete(key);
    }
  }

  private complete(key: string, entry: Entry, retentionMs: number, at: number): void {
    // Whole ms, as packed: the expiry queue finds the record by its time, which must be the one the
    // packed string gives back (a clock that reads fractions, performance.timeOrigin + now, would
    // never match). Packed before anything changes: a time the packing cannot hold (outside 0 to
    // 2^48 ms) throws with the record as it was (a lease that runs out and can be taken over), not
    // a lease stretched to the retention.
    const expiresAt = Math.floor(at + retentionMs);
    const packed = pack(entry, expiresAt, Math.floor(at));
    // set() replaces the key's lease (or earlier completion) in place.
    this.records.set(key, packed);
    this.schedule(key, expiresAt);
  }

  async claim(key: string, { leaseMs, fingerprint, retentionMs }: ClaimOptions): Promise<Claim> {
    const at = this.time();
    const record = this.recordOf(key, at);
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
    if (!held) this.makeRoom(at);
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
    if (!held) this.records.set(key, entry);
    this.schedule(key, dropAtOf(entry));
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
  }

  /** The steps stored under the lease's key: a lease's or a released or run-out record's. */
  async loadSteps(lease: Lease): Promise<ReadonlyMap<string, string>> {
    const record = this.recordOf(lease.key, this.time());
    return typeof record === 'object' && record.steps ? new Map(record.steps) : EMPTY_STEPS;
  }

  /** Stores one step's result when the lease still owns its key; completion (packing) drops them. */
  async saveStep(lease: Lease, name: string, value: string): Promise<boolean> {
    const held = this.leaseOf(lease, this.time());
    if (!held) return false;
    held.steps ??= new Map();
    held.steps.set(name, value);
    return true;
  }

  async confirm(lease: Lease, { retentionMs }: { retentionMs: number }): Promise<boolean> {
    // No real token is empty: '' marks a released record, which nobody owns.
    if (lease.token === '') return false;
    const at = this.time();
    const record = this.recordOf(lease.key, at);
    if (record !== undefined) {
      // A lease or a released or run-out record; or completed already (a repeated confirm).
      const held = typeof record === 'string' ? unpack(record) : record;
      if (held.token !== lease.token) return false;
      this.complete(lease.key, held, retentionMs, at);
      return true;
    }
    // The record vanished (its lease ran out and its grace passed, nobody took over): the work is
    // done, so write it as completed; a later retry must see a duplicate.
    this.makeRoom(at);
    const entry: Entry = {
      token: lease.token,
      attempt: lease.attempt,
      fingerprint: lease.fingerprint,
      expiresAt: 0,
      updatedAt: at,
      graceMs: 0,
    };
    this.complete(lease.key, entry, retentionMs, at);
    return true;
  }

  async release(lease: Lease): Promise<boolean> {
    const at = this.time();
    const held = this.leaseOf(lease, at);
    if (!held) return false;
    // Released: nobody owns it, takeable at once, attempt and fingerprint kept for its grace.
    held.token = '';
    held.expiresAt = at;
    held.updatedAt = at;
    this.schedule(lease.key, dropAtOf(held));
    return true;
  }

  async extend(lease: Lease, { leaseMs }: { leaseMs: number }): Promise<boolean> {
    const at = this.time();
    const held = this.leaseOf(lease, at);
    if (!held) return false;
    held.expiresAt = at + leaseMs;
    held.updatedAt = at;
    this.schedule(lease.key, dropAtOf(held));
    return true;
  }

  async record(key: string, { retentionMs, fingerprint }: RecordOptions): Promise<{ duplicate: boolean }> {
    const at = this.time();
    const held = this.recordOf(key, at);
    if (typeof held === 'string') return { duplicate: true };
    // A live lease, or a takeable record of another body (it keeps its fingerprint), is a duplicate.
    if (held && (isLive(held, at) || !sameFingerprint(held.fingerprint, fingerprint)))
      return { duplicate: true };
    if (!held) this.makeRoom(at);
    const entry: Entry = {
      token: newToken(),
      attempt: (held?.attempt ?? 0) + 1,
      fingerprint,
      expiresAt: 0,
      updatedAt: at,
      graceMs: 0,
    };
    this.complete(key, entry, retentionMs, at);
    return { duplicate: false };
  }

  async advance(entity: string, version: number): Promise<boolean> {
    assertVersion(version);
    const { versions } = this;
    const current = versions.get(entity);
    if (current !== undefined && version <= current) return false;
    versions.delete(entity);
    if (versions.size >= this.maxEntries) {
      const oldest = versions.keys().next();
      if (!oldest.done) versions.delete(oldest.value);
    }
    versions.set(entity, version);
    return true;
  }

  async inspect(key: string): Promise<RecordView | undefined> {
    const at = this.time();
    const record = this.recordOf(key, at);
    if (record === undefined) return undefined;
    if (typeof record === 'string') return view(key, unpack(record), 'completed');
    return view(key, record, record.token === '' ? 'released' : 'processing');
  }

  async stats(): Promise<StoreStats> {
    const at = this.time();
    let live = 0;
    let takeable = 0;
    let done = 0;
    for (const record of this.records.values()) {
      if (typeof record === 'string') {
        if (expiresAtOf(record) > at) done++;
      } else if (isLive(record, at)) live++;
      else if (dropAtOf(record) > at) takeable++;
    }
    return { processing: live, takeable, completed: done };
  }

  async oldestLeases(limit: number): Promise<RecordView[]> {
    const at = this.time();
    const held: [string, Entry][] = [];
    for (const [key, record] of this.records)
      if (typeof record !== 'string' && dropAtOf(record) > at) held.push([key, record]);
    return held
      .sort(([, a], [, b]) => a.expiresAt - b.expiresAt)
      .slice(0, limit)
      .map(([key, entry]) => view(key, entry, entry.token === '' ? 'released' : 'processing'));
  }

  async close(): Promise<void> {
    this.records.clear();
    this.versions.clear();
    this.expiries.clear();
  }
}
