/**
 * The lease handle: what a claim gives its owner, and every later write presents. Apart from the
 * store contract (types.ts) so that the inbox contract can name it without an import circle.
 */

/**
 * A claim held by one owner. Key, token, attempt and fingerprint are fixed at claim: nothing the
 * handler does changes what is confirmed or released. Lease handles are frozen.
 */
export interface Lease {
  /** The deduplication key this lease holds. */
  readonly key: string;
  /** Random 128-bit owner id; every later write must present it. */
  readonly token: string;
  /** 1 for the first claim of a key, +1 on every later claim (after a release or a takeover): a fencing number. */
  readonly attempt: number;
  /** SHA-256 of the delivery's body (or whatever the caller fingerprinted), if any. */
  readonly fingerprint: string | undefined;
  /** When the lease runs out unless extended, on the store's clock. */
  readonly expiresAt: Date;
}

/** Builds the frozen lease handle every store returns from `claim`. */
export function createLease(fields: {
  key: string;
  token: string;
  attempt: number;
  fingerprint: string | undefined;
  expiresAt: Date;
}): Lease {
  return Object.freeze({
    key: fields.key,
    token: fields.token,
    attempt: fields.attempt,
    fingerprint: fields.fingerprint,
    expiresAt: fields.expiresAt,
  });
}
