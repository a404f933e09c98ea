/**
 * Every error onceonly throws or reports is an {@link OnceonlyError}: a stable machine-readable
 * `code`, the HTTP `status` it maps to, and the underlying `cause` when there is one. Messages start
 * with `onceonly:` and say what to do next. Messages of errors that reach an HTTP response never
 * contain a secret, a signature or a stack trace.
 */
/**
 * The class names of an error's chain, under a global symbol: `instanceof` holds across the ESM and
 * the CommonJS copies of the package (an app that both imports and requires it has two copies of
 * every class, and a store of one copy may throw to a receiver of the other).
 */
const KINDS = Symbol.for('onceonly.error.kinds');

export class OnceonlyError extends Error {
  /** True for an error of this class made by either copy of the package (ESM or CommonJS). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    // `this` is the class on the right of `instanceof`: every subclass inherits the check.
    // biome-ignore lint/complexity/noThisInStatic: the class tested against, not OnceonlyError
    // biome-ignore lint/complexity/noUselessThisAlias: named for what it is
    const tested: Function = this;
    if (Function.prototype[Symbol.hasInstance].call(tested, value)) return true;
    const kinds =
      typeof value === 'object' && value !== null ? (value as Record<symbol, unknown>)[KINDS] : undefined;
    // A class without a name (an anonymous subclass of an app's own) matches only its own instances.
    return tested.name !== '' && Array.isArray(kinds) && kinds.includes(tested.name);
  }

  /** Stable machine-readable code, safe to branch on and to show to a caller. */
  readonly code: string;
  /** The HTTP status this error maps to when it ends a delivery. */
  readonly status: number;

  constructor(code: string, message: string, options: { status?: number; cause?: unknown } = {}) {
    super(message.startsWith('onceonly:') ? message : `onceonly: ${message}`, { cause: options.cause });
    this.name = new.target.name;
    const kinds: string[] = [];
    for (let c: unknown = new.target; typeof c === 'function' && c !== Error; c = Object.getPrototypeOf(c))
      kinds.push((c as { name: string }).name);
    Object.defineProperty(this, KINDS, { value: kinds });
    this.code = code;
    this.status = options.status ?? 500;
  }
}

/** A configuration mistake found at construction time (bad secret, bad duration, bad option). */
export class ConfigError extends OnceonlyError {
  constructor(code: string, message: string, options: { cause?: unknown } = {}) {
    super(code, message, { status: 500, ...options });
  }
}

/**
 * Why a delivery was refused before it touched the store or the handler. Stable: these codes are
 * part of the public contract and appear in the `code` field of the response body.
 */
export type RejectionCode =
  | 'missing_header'
  | 'malformed_header'
  | 'timestamp_too_old'
  | 'timestamp_too_new'
  | 'invalid_signature'
  | 'invalid_body'
  /** The body ended early: the sender closed the connection (or the body source failed) mid-body. */
  | 'body_aborted'
  | 'missing_event_id'
  | 'method_not_allowed'
  | 'unkeyed'
  | 'invalid_token'
  | 'untrusted_key_url'
  | 'unknown_key'
  | 'key_unavailable';

const rejectionStatus: Record<RejectionCode, number> = {
  missing_header: 400,
  malformed_header: 400,
  timestamp_too_old: 401,
  timestamp_too_new: 401,
  invalid_signature: 401,
  invalid_body: 400,
  body_aborted: 400,
  missing_event_id: 400,
  method_not_allowed: 405,
  unkeyed: 422,
  // A shared token or basic-auth credential that matched none configured.
  invalid_token: 401,
  // The delivery names a key URL outside the sender's allowed hosts: refused without a request.
  untrusted_key_url: 400,
  // No key of the sender's key set (fetched or configured) has the id the signature names.
  unknown_key: 401,
  // The sender's key server did not answer in time or answered with an error: the provider's retry
  // may succeed, so 503 rather than a 4xx that some senders never retry.
  key_unavailable: 503,
};

/**
 * A delivery failed verification or validation. Its message is written for the provider's delivery
 * log and for the operator: it names the header or rule, never the secret or the expected signature.
 */
export class VerificationError extends OnceonlyError {
  declare readonly code: RejectionCode;
  constructor(code: RejectionCode, message: string, options: { cause?: unknown } = {}) {
    super(code, message, { status: rejectionStatus[code], ...options });
  }
}

/** The request body exceeded `maxBodyBytes`; reading stopped at the limit. */
export class BodyTooLargeError extends OnceonlyError {
  readonly limit: number;
  constructor(limit: number) {
    super(
      'body_too_large',
      `request body is larger than maxBodyBytes (${limit} bytes); raise maxBodyBytes if this provider sends larger payloads`,
      {
        status: 413,
      },
    );
    this.limit = limit;
  }
}

/** The request body did not arrive within `bodyTimeout` (a slow or stalled sender). */
export class BodyTimeoutError extends OnceonlyError {
  constructor(timeoutMs: number) {
    super('body_timeout', `request body did not arrive within ${timeoutMs} ms`, { status: 408 });
  }
}

/**
 * Another body parser consumed or parsed the request body before onceonly saw it, and did not keep
 * the raw bytes. Verifying a re-serialised body would fail as a confusing signature mismatch, so the
 * delivery is refused as an operator error (500: the provider retries once the app is fixed). The
 * message names the one line to change.
 */
export class BodyAlreadyParsedError extends OnceonlyError {
  constructor(fix: string) {
    super(
      'body_already_parsed',
      `the request body was already read by another body parser, so its exact bytes (which the signature covers) are gone; ${fix}`,
      { status: 500 },
    );
  }
}

/** The store could not be reached or answered with an error. */
export class StoreUnavailableError extends OnceonlyError {
  constructor(message: string, options: { cause?: unknown; code?: string } = {}) {
    super(options.code ?? 'store_unavailable', message, { status: 503, cause: options.cause });
  }
}

/**
 * A store call did not answer within `storeTimeout`. Counted as a store error: the claim fails
 * closed (503) or runs degraded (fail-open); after the handler, a confirm is retried while the lease
 * lasts and the outcome is degraded `confirm-failed`.
 */
export class StoreTimeoutError extends StoreUnavailableError {
  /** The store operation that timed out: claim, confirm, release, extend or record. */
  readonly operation: string;
  constructor(operation: string, timeoutMs: number) {
    super(
      `the store did not answer ${operation} within ${timeoutMs} ms (storeTimeout); it is frozen, overloaded or unreachable. Check the store; raise storeTimeout only if it is merely slow`,
      { code: 'store_timeout' },
    );
    this.operation = operation;
  }
}

/** Codes of a store that is reachable but set up wrongly: permanent until someone fixes it. */
export type MisconfigurationCode =
  | 'store_auth_failed'
  | 'store_permission_denied'
  | 'store_missing_table'
  | 'store_unknown_database'
  | 'store_foreign_value';

/**
 * The store is reachable but refuses the work for a reason that will not pass on its own: bad
 * credentials, a missing permission, a missing table with `autoCreate` off, a database that does
 * not exist, a key written by something else. Still answered like an outage (fail-closed: 503, so
 * the provider retries once it is fixed), but with its own code, a message naming the cause and the
 * fix, and logged as an error.
 */
export class StoreMisconfiguredError extends StoreUnavailableError {
  declare readonly code: MisconfigurationCode;
  constructor(code: MisconfigurationCode, message: string, options: { cause?: unknown } = {}) {
    super(message, { code, cause: options.cause });
  }
}

/**
 * The memory store is full and every entry is a live lease or a record it may not forget yet (a
 * completed, released or run-out key within its retention). Treated like any store outage: fail-closed answers 503 and the provider retries later.
 */
export class StoreFullError extends StoreUnavailableError {
  constructor(limit: number, unit: 'entries' | 'bytes' = 'entries') {
    super(
      unit === 'entries'
        ? `memory store is full: none of its ${limit} entries may be forgotten yet (live leases, and keys within their retention); raise maxEntries or use a shared store`
        : `memory store's inbox is full: its deliveries hold ${limit} bytes, none of which may be forgotten yet (entries to run, dead ones, completed ones within their retention); raise maxInboxBytes or use a shared store`,
      { code: 'store_full' },
    );
  }
}

/** The handler ran past its deadline and was aborted; the claim was released. */
export class HandlerTimeoutError extends OnceonlyError {
  constructor(timeoutMs: number) {
    super(
      'handler_timeout',
      `handler did not finish within ${timeoutMs} ms; it was aborted and the claim released`,
      {
        status: 500,
      },
    );
  }
}

/** Another owner took the lease over (ours ran out); the signal passed to the handler aborts with this. */
export class LeaseLostError extends OnceonlyError {
  constructor(key: string) {
    super(
      'lease_lost',
      `lease on "${key}" was lost to another owner; make the handler's writes check the attempt number`,
      {
        status: 200,
      },
    );
  }
}

// Every class keeps its own name under minification. A production bundle (Next.js's, for one) may
// rename or strip class names (`class extends n`, whose name is ""); the cross-copy `instanceof`
// above compares names, so unnamed classes all matched one another and a rejected signature was
// answered as a body too large. The names are string literals here, which no minifier rewrites.
for (const [errorClass, name] of [
  [OnceonlyError, 'OnceonlyError'],
  [ConfigError, 'ConfigError'],
  [VerificationError, 'VerificationError'],
  [BodyTooLargeError, 'BodyTooLargeError'],
  [BodyTimeoutError, 'BodyTimeoutError'],
  [BodyAlreadyParsedError, 'BodyAlreadyParsedError'],
  [StoreUnavailableError, 'StoreUnavailableError'],
  [StoreTimeoutError, 'StoreTimeoutError'],
  [StoreMisconfiguredError, 'StoreMisconfiguredError'],
  [StoreFullError, 'StoreFullError'],
  [HandlerTimeoutError, 'HandlerTimeoutError'],
  [LeaseLostError, 'LeaseLostError'],
] as const) {
  Object.defineProperty(errorClass, 'name', { value: name, configurable: true });
}
