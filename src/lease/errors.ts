/**
 * Every error onceonly throws or reports is an {@link OnceonlyError}: a stable machine-readable
 * `code`, the HTTP `status` it maps to, and the underlying `cause` when there is one. Messages start
 * with `onceonly:` and say what to do next. Messages of errors that reach an HTTP response never
 * contain a secret, a signature or a stack trace.
 */
export class OnceonlyError extends Error {
  /** Stable machine-readable code, safe to branch on and to show to a caller. */
  readonly code: string;
  /** The HTTP status this error maps to when it ends a delivery. */
  readonly status: number;

  constructor(code: string, message: string, options: { status?: number; cause?: unknown } = {}) {
    super(message.startsWith('onceonly:') ? message : `onceonly: ${message}`, { cause: options.cause });
    this.name = new.target.name;
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
  | 'missing_event_id'
  | 'method_not_allowed'
  | 'unkeyed';

const rejectionStatus: Record<RejectionCode, number> = {
  missing_header: 400,
  malformed_header: 400,
  timestamp_too_old: 401,
  timestamp_too_new: 401,
  invalid_signature: 401,
  invalid_body: 400,
  missing_event_id: 400,
  method_not_allowed: 405,
  unkeyed: 422,
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
 * The memory store is full and every entry is a live lease or a remembered completion it may not
 * drop. Treated like any store outage: fail-closed answers 503 and the provider retries later.
 */
export class StoreFullError extends StoreUnavailableError {
  constructor(maxEntries: number) {
    super(
      `memory store is full: all ${maxEntries} entries are live leases; raise maxEntries or use a shared store`,
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
