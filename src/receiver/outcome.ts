/**
 * Every result a receiver reports is built here: from what is known of the delivery so far
 * (`Known`, filled in as the stages learn it) and what its outcome adds, as one object literal of
 * one shape. Also the outcome of a refused delivery (`rejection`), of a batch (`batchResult`), and
 * a failure's code.
 */
import type { DegradedReason } from '../core/engine.js';
import {
  BodyAlreadyParsedError,
  BodyTimeoutError,
  BodyTooLargeError,
  ConfigError,
  OnceonlyError,
  VerificationError,
} from '../errors.js';
import type { DeliveryResult, Outcome } from './result.js';

/** What is known of a delivery so far: the fields every result of it carries unless its outcome says otherwise. */
export interface Known {
  provider: string;
  receiver: string;
  key: string | undefined;
  id: string | undefined;
  type: string | undefined;
  attempt: number | undefined;
  degraded: DegradedReason | undefined;
  code: string | undefined;
  error: unknown;
  cause: unknown;
  response: Response | undefined;
  retryAfter: number | undefined;
}

/** Reports one outcome of a delivery, with what its outcome adds to what is known: the result. */
export type Done = (outcome: Outcome, status: number, extra?: Partial<DeliveryResult>) => DeliveryResult;

/** What is known of a delivery before anything is read of it, or of an entry or event already keyed. */
export function known(provider: string, receiver: string, key?: string, id?: string, type?: string): Known {
  return {
    provider,
    receiver,
    key,
    id,
    type,
    attempt: undefined,
    degraded: undefined,
    code: undefined,
    error: undefined,
    cause: undefined,
    response: undefined,
    retryAfter: undefined,
  };
}

/**
 * A result from what is known of the delivery (`base`) and what the outcome adds (`extra`, whose
 * own fields win, `undefined` included), built as one object literal of one shape: no spreads on
 * the path every delivery takes.
 */
export function resultOf(
  base: Known,
  extra: Partial<DeliveryResult>,
  outcome: Outcome,
  status: number,
  started: number,
): DeliveryResult {
  // Each field named (not a helper taking the name): a read by a variable name is a keyed load,
  // slow on this path.
  return {
    outcome,
    status,
    degraded: 'degraded' in extra ? extra.degraded : base.degraded,
    code: 'code' in extra ? extra.code : base.code,
    provider: base.provider,
    receiver: base.receiver,
    key: 'key' in extra ? extra.key : base.key,
    id: 'id' in extra ? extra.id : base.id,
    type: 'type' in extra ? extra.type : base.type,
    attempt: 'attempt' in extra ? extra.attempt : base.attempt,
    error: 'error' in extra ? extra.error : base.error,
    cause: 'cause' in extra ? extra.cause : base.cause,
    response: 'response' in extra ? extra.response : base.response,
    retryAfter: 'retryAfter' in extra ? extra.retryAfter : base.retryAfter,
    durationMs: Date.now() - started,
    batch: extra.batch,
    inbox: extra.inbox,
  };
}

/** The `done` of one delivery, event or entry: each outcome built by {@link resultOf}, then reported. */
export function doneFor(
  base: Known,
  started: number,
  report: (result: DeliveryResult) => DeliveryResult,
): Done {
  return (outcome, status, extra = {}) => report(resultOf(base, extra, outcome, status, started));
}

/** The outcome of a delivery refused before it ran: its status and stable code by the error's kind. */
export function rejection(
  error: unknown,
  done: (outcome: Outcome, status: number, extra: { code?: string; error?: unknown }) => DeliveryResult,
): DeliveryResult {
  if (error instanceof BodyTooLargeError) return done('too-large', 413, { code: error.code, error });
  if (error instanceof BodyTimeoutError) return done('rejected', 408, { code: error.code, error });
  // The app's own body parser got there first: an operator error, answered 500 so the provider
  // retries once the app is fixed, with the message naming the line to change.
  if (error instanceof BodyAlreadyParsedError) return done('rejected', 500, { code: error.code, error });
  if (error instanceof VerificationError) return done('rejected', error.status, { code: error.code, error });
  // A setup mistake found on delivery (twilio without its url): 500 so the provider retries once
  // it is fixed, logged as an error; never a rejected promise.
  if (error instanceof ConfigError) return done('rejected', 500, { code: error.code, error });
  // A provider that threw something unexpected on hostile input: still a clean 400, never a crash.
  return done('rejected', 400, { code: 'invalid_body', error });
}

/**
 * The one answer for a batch: its worst event (store unavailable, then failed, then in flight, then
 * conflict) when one of them makes the provider retry or is refused; else 200, `processed` when any
 * event ran. Each event's own result is in `batch`.
 */
export function batchResult(results: readonly DeliveryResult[], durationMs: number): DeliveryResult {
  const rank = (r: DeliveryResult) =>
    r.outcome === 'store-unavailable' && r.status >= 500
      ? 0
      : r.status >= 500
        ? 1
        : r.status === 409
          ? 2
          : r.status >= 400
            ? 3
            : 4;
  const worst = results.reduce((a, b) => (rank(b) < rank(a) ? b : a));
  const refused = rank(worst) < 4;
  let outcome: Outcome = worst.outcome;
  // Inbox mode: a batch with an event kept for later is accepted, answered as the inbox answers.
  const accepted = results.find((r) => r.outcome === 'accepted');
  if (!refused) {
    if (accepted) outcome = 'accepted';
    else if (results.some((r) => r.outcome === 'processed' || r.outcome === 'lease-lost'))
      outcome = 'processed';
    else if (results.every((r) => r.outcome === 'ignored')) outcome = 'ignored';
    else if (results.some((r) => r.outcome === 'duplicate')) outcome = 'duplicate';
  }
  const attempts = results.map((r) => r.attempt ?? 0);
  const waits = results.map((r) => r.retryAfter).filter((w): w is number => w !== undefined);
  return {
    outcome,
    status: refused ? worst.status : (accepted?.status ?? 200),
    degraded: results.find((r) => r.degraded)?.degraded,
    code: refused ? worst.code : undefined,
    provider: worst.provider,
    receiver: worst.receiver,
    key: undefined,
    id: undefined,
    type: undefined,
    attempt: Math.max(...attempts) || undefined,
    error: refused ? worst.error : undefined,
    response: undefined,
    retryAfter: refused && waits.length > 0 ? Math.max(...waits) : undefined,
    durationMs,
    batch: results,
  };
}

/** A failed run's code: the error's own when it is one of onceonly's, else `handler_failed`. */
export function failureCode(error: unknown): string {
  return error instanceof OnceonlyError ? error.code : 'handler_failed';
}
