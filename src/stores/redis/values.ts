/**
 * The Redis store's claim values and leases, as data: a claim key's value
 * (`state|token|attempt|graceMs|ttlMs|fingerprint field`, see redis/scripts.ts) and how the store
 * reads it, owner ids, what a claim wrote for its confirm, and the bounds on durations.
 */
import { confirmMarginMs } from '../../core/timers.js';
import type { RecordView } from '../../core/types.js';
import { ConfigError, StoreUnavailableError } from '../../errors.js';

// Lua formats numbers with 14 significant digits, so every duration handed to a script stays below
// 1e13 ms (about 300 years) and is passed as a decimal string built here.
export const MAX_MS = 1e13;
/** The lease end after a token's owner id: decimal ms on the server's clock. */
export const TOKEN_END = /^[0-9a-f]+\.(\d{1,15})$/;

/**
 * The owner id of a token (what the scripts compare): the token up to its `.`, or undefined for a
 * token no claim of this store made (empty, or with the field separator).
 */
export function ownerId(token: string): string | undefined {
  const dot = token.indexOf('.');
  const id = dot === -1 ? token : token.slice(0, dot);
  return id === '' || id.includes('|') ? undefined : id;
}

/**
 * What `owned` says of the value a native confirm's SET found instead of the claim's: true when
 * that was the claim's own value (the SET completed it) or the owner's completed record (a repeated
 * confirm: answered without writing it again, so its retention counts from the first completion);
 * undefined when it is the owner's lease renewed, or a bare `OK` (a server that took IFEQ but not
 * GET): a second command decides; false for anything else (another owner, a released record, a
 * value onceonly did not write), as the script.
 */
export function owned(was: string, id: string, claimed: string): boolean | undefined {
  if (was === claimed) return true;
  if (was === 'OK') return undefined;
  const state = was[0];
  const after = was[2 + id.length];
  if ((state !== 'p' && state !== 'c') || was[1] !== '|' || !was.startsWith(id, 2)) return false;
  if (after !== '|' && after !== '.') return false;
  return state === 'c' ? true : undefined;
}

/**
 * What a lease's claim wrote (none once renewed), and until when (on `leaseNow()`'s clock, which
 * counts a host's suspend) a command of its confirm may still be sent after another: the lease's
 * end as last claimed or renewed, less the engine's confirm margin.
 */
export interface Written {
  value: string | undefined;
  bound: number;
}

/** Until when a confirm's later command may go out for a lease claimed or renewed at `sentAt` (`leaseNow()`). */
export function confirmBound(sentAt: number, leaseMs: number): number {
  return sentAt + leaseMs - confirmMarginMs(leaseMs);
}

/** What a claim wrote, kept unless the server would answer it back changed (see LONE_SURROGATE). */
export function claimWritten(value: string, fp: string, sentAt: number, leaseMs: number): Written {
  return { value: LONE_SURROGATE.test(fp) ? undefined : value, bound: confirmBound(sentAt, leaseMs) };
}

/** A confirm's second command would go out past its lease's end (see {@link Written}). */
export function tooLate(what: string): StoreUnavailableError {
  return new StoreUnavailableError(
    `onceonly: Redis confirm could not finish before the lease's end: ${what}, and a second command now could land after the lease ran out`,
  );
}

/** Lone UTF-16 surrogates: a value holding one comes back from the server otherwise (U+FFFD). */
const LONE_SURROGATE = /[\ud800-\udfff]/;

/** A native confirm the server refused: the script answers instead. */
export const REFUSED = Symbol('refused');

export function duration(value: number, name: string): number {
  if (!Number.isFinite(value) || value < 1 || value > MAX_MS) {
    throw new ConfigError(
      'invalid_duration',
      `onceonly: redisStore ${name} must be between 1 ms and ${MAX_MS} ms, got ${value}`,
    );
  }
  return Math.ceil(value);
}

export const fingerprintField = (fingerprint: string | undefined) =>
  fingerprint === undefined ? '' : `=${fingerprint}`;

/**
 * A claim key's value, `state|token|attempt|graceMs|ttlMs|fingerprint field` (see redis/scripts.ts),
 * as the store reads it: [1] state (`p` or `c`), [2] token, [3] attempt, [4] grace, [5] ttl,
 * [6] fingerprint field.
 */
export const VALUE = /^([pc])\|([^|]*)\|(\d+)\|(\d+)\|(\d+)\|(.*)$/s;

/** Stored and offered fingerprint fields match when equal or when either side has none (''). */
export const sameField = (stored: string, offered: string) =>
  stored === '' || offered === '' || stored === offered;

/** What `inspect` shows of a claim key's value, or undefined for a value onceonly did not write. */
export function parseView(key: string, value: string, keyExpiresAt: number): RecordView | undefined {
  const match = VALUE.exec(value);
  if (!match) return undefined;
  const [, state, token, attempt, graceMs, ttlMs, fp] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  return {
    key,
    // A processing record without a token was released: nobody owns it.
    state: state === 'c' ? 'completed' : token === '' ? 'released' : 'processing',
    attempt: Number(attempt),
    fingerprint: fp === '' ? undefined : fp.slice(1),
    expiresAt: new Date(keyExpiresAt - Number(graceMs)),
    // The key's expiry minus the TTL it was written with: the server time of the claim, the last
    // renewal, the release, or the completion.
    updatedAt: new Date(keyExpiresAt - Number(ttlMs)),
  };
}
