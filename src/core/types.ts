/**
 * The store contract. Every store (memory, Redis, PostgreSQL, MySQL, SQLite, or your own) keeps a
 * record per key that moves through these states, on the store's own clock:
 *
 * ```
 * absent ──claim──▶ processing(token, attempt, expiresAt = now + lease)
 * processing ──extend(token)──▶ processing(expiresAt = now + lease)
 * processing ──confirm(token)──▶ completed(expiresAt = now + retention)
 * processing ──release(token)──▶ released(attempt, fingerprint): takeable at once, no owner
 * released ──claim──▶ processing(new token, attempt + 1)
 * processing ──lease runs out──▶ takeable ──claim──▶ processing(new token, attempt + 1)
 * completed ──retention runs out──▶ absent
 * ```
 *
 * The attempt is a fencing number: it never goes back while the key lives. A released or run-out
 * record is kept (takeable) for at least the claim's `retentionMs` after its lease's end, so the next
 * claim within the provider's retry window still gets attempt + 1. A takeable record keeps its
 * fingerprint: a claim with another fingerprint does not take it over (reported in-flight with
 * `sameFingerprint: false`, which the engine reports as a conflict).
 *
 * A store is correct when it passes `onceonly/testing`'s conformance suite.
 */

import type { InboxStore } from './inbox.js';
import type { Lease } from './lease.js';
import type { StepStore } from './step-store.js';
import { markKind } from './telemetry.js';

export { createLease, type Lease } from './lease.js';
export type { StepStore } from './step-store.js';

/** What `claim` found. */
export type Claim =
  | { readonly status: 'acquired'; readonly lease: Lease }
  | {
      readonly status: 'in-flight';
      /** The attempt number of the live owner. */
      readonly attempt: number;
      /** When the live owner's lease runs out (store clock). */
      readonly expiresAt: Date;
      /** Whether the live owner claimed the same fingerprint (true when either side has none). */
      readonly sameFingerprint: boolean;
    }
  | {
      readonly status: 'completed';
      /** Whether the completed record has the same fingerprint (true when either side has none). */
      readonly sameFingerprint: boolean;
    };

/** A read-only view of one record, for operators and tests. */
export interface RecordView {
  readonly key: string;
  /**
   * `processing` with `expiresAt` in the past means the lease ran out and the key is takeable;
   * `released` means its owner gave it up (the handler failed): takeable at once, attempt kept.
   */
  readonly state: 'processing' | 'completed' | 'released';
  readonly attempt: number;
  readonly fingerprint: string | undefined;
  /** End of the lease (processing, released) or of retention (completed), store clock. */
  readonly expiresAt: Date;
  /** When the record was last written (claim, extend, release or confirm), store clock, where the store knows it. */
  readonly updatedAt?: Date | undefined;
}

export interface ClaimOptions {
  /** How long the lease lasts unless extended, in ms. */
  leaseMs: number;
  /** Fingerprint of the work (SHA-256 of the body); the same key with another fingerprint is a conflict. */
  fingerprint?: string | undefined;
  /**
   * How long the key must be remembered if this claim never completes (it is released, or its lease
   * runs out): the record stays takeable, with its attempt and fingerprint, for at least this long
   * after its lease's end, so a retry within the provider's window still gets attempt + 1. The
   * engine passes the receiver's retention. When absent the store uses its own default.
   */
  retentionMs?: number | undefined;
}

export interface RecordOptions {
  /** How long the key is remembered, in ms. */
  retentionMs: number;
  fingerprint?: string | undefined;
  /** A transaction of the caller's to join (SQL stores only; see each store's docs). */
  tx?: unknown;
}

export interface Store {
  /**
   * The store's inbox, for receivers in inbox mode (`createReceiver({ inbox: true })`): verified
   * deliveries written durably, processed by workers under the same fenced leases. The built-in
   * stores have one, over the same client; see `InboxStore`.
   */
  readonly inbox?: InboxStore | undefined;
  /**
   * Durable steps (`ctx.step`) of a key, under the lease of its run: kept through releases and
   * takeovers, gone with `confirm` and with the key. The built-in stores have them; see
   * {@link StepStore}.
   */
  readonly steps?: StepStore | undefined;
  /** Claims `key` for a new owner, or reports who holds it. Takes over a lease that ran out (attempt + 1). */
  claim(key: string, options: ClaimOptions): Promise<Claim>;
  /**
   * Marks the work done and keeps the key for `retentionMs`. `false` when another owner holds the key
   * (our lease was lost) or the record was released: nothing changes then. If the record vanished
   * (our lease ran out, nobody took over, and the store forgot it), it is written as completed, since
   * the work is done and a retry must see a duplicate.
   */
  confirm(lease: Lease, options: { retentionMs: number }): Promise<boolean>;
  /**
   * Gives the key up so the next delivery gets in at once: the record becomes `released`, takeable
   * immediately, keeping its attempt (the next claim gets attempt + 1) and its fingerprint, for the
   * claim's `retentionMs`. After it the token owns nothing: its confirm, extend and release are
   * `false`. `false` (and no change) unless we are the owner of a processing record.
   */
  release(lease: Lease): Promise<boolean>;
  /**
   * Pushes the lease's end to now + `leaseMs`. `false` (and no change) unless the record is still
   * ours and processing. A lease that ran out with nobody taking over is still ours, and a store may
   * revive it (the built-in ones do): at most one owner is live either way, since a takeover changes
   * the token first.
   */
  extend(lease: Lease, options: { leaseMs: number }): Promise<boolean>;
  /**
   * Single-shot dedup: claim and confirm in one step. `duplicate: true` when the key was already there.
   * A released or run-out record is taken over and completed (attempt + 1), unless it holds another
   * fingerprint: it keeps that one, and the call is a duplicate, as with a live lease.
   */
  record(key: string, options: RecordOptions): Promise<{ duplicate: boolean }>;
  /** Ordering guard: stores `version` for `entity` only when it is newer than the stored one. */
  advance(entity: string, version: number): Promise<boolean>;
  /** The record for `key`, or `undefined`. Expired completed records read as absent. */
  inspect(key: string): Promise<RecordView | undefined>;
  /** Releases what the store itself opened (never the client the user passed in). */
  close(): Promise<void>;
}

/** Fingerprints match when they are equal or when either side has none. */
export function sameFingerprint(
  stored: string | undefined | null,
  offered: string | undefined | null,
): boolean {
  return stored == null || offered == null || stored === offered;
}

/** Versions of the ordering guard are finite numbers (a counter, a timestamp in ms). */
export function assertVersion(version: number): void {
  if (typeof version !== 'number' || !Number.isFinite(version)) {
    throw new TypeError(`onceonly: advance() needs a finite number as version, got ${String(version)}`);
  }
}

/** Counts of records by state, on the store's clock. */
export interface StoreStats {
  /** Live leases: work running now. */
  readonly processing: number;
  /**
   * Records nobody holds that a claim takes over with attempt + 1: leases that ran out (crashed work)
   * and released ones (failed work), waiting for their retry.
   */
  readonly takeable: number;
  /** Completed keys still within retention. */
  readonly completed: number;
  /** Set when the counts stopped at a bound (the CLI's Redis overview reads at most 100,000 keys). */
  readonly partial?: boolean;
}

/**
 * Operator views that the built-in stores offer beyond the contract (`onceonly inspect` uses them).
 * Optional for your own store.
 */
export interface StoreAdmin {
  /** Counts by state. */
  stats(): Promise<StoreStats>;
  /** Processing records, soonest expiry first: leases that ran out (stuck work) lead the list. */
  oldestLeases(limit: number): Promise<RecordView[]>;
}

/** Whether a store offers {@link StoreAdmin}'s views. */
export function hasAdmin(store: Store): store is Store & StoreAdmin {
  const s = store as Partial<StoreAdmin>;
  return typeof s.stats === 'function' && typeof s.oldestLeases === 'function';
}

/**
 * What a built-in store keys its records on: the client it was given and the table or prefix it
 * writes under. Two store objects over one backend share every key; the receiver refuses two
 * receivers of one key space on one backend. Set with {@link markBackend}.
 */
const BACKEND = Symbol.for('onceonly.backend');

export function markBackend<S extends object>(client: object, scope: string, store: S): S {
  Object.defineProperty(store, BACKEND, { value: { object: client, scope }, enumerable: false });
  return store;
}

/** A built-in store: its backend ({@link markBackend}) and its kind (`redis`, `postgres`...), for telemetry and health. */
export function markBuiltin<S extends object>(kind: string, client: object, scope: string, store: S): S {
  return markKind(kind, markBackend(client, scope, store));
}

/** The backend a store writes to: its client and scope, or the store itself for a custom store. */
export function backendOf(store: Store): { object: object; scope: string } {
  const marked = (store as unknown as Record<symbol, unknown>)[BACKEND] as
    | { object?: unknown; scope?: unknown }
    | undefined;
  // Only a mark this module made counts: a wrapper or a Proxy that answers every property
  // (a test double, an instrumenting layer) is its own backend.
  if (
    marked !== null &&
    typeof marked === 'object' &&
    typeof marked.object === 'object' &&
    marked.object !== null &&
    typeof marked.scope === 'string'
  ) {
    return marked as { object: object; scope: string };
  }
  return { object: store, scope: '' };
}
