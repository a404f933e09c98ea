import { OnceonlyError } from '../errors.js';
import type { DeliveryResult } from './receiver.js';

/** Every outcome of a delivery. */
export type Outcome =
  | 'processed'
  | 'duplicate'
  | 'in-flight'
  | 'failed'
  | 'lease-lost'
  | 'conflict'
  | 'store-unavailable'
  | 'unkeyed'
  | 'rejected'
  | 'too-large'
  | 'ignored'
  /** Inbox mode: written durably; a worker runs it (202 by default). */
  | 'accepted'
  /** Inbox mode: an entry that failed `maxAttempts` times or for longer than `maxAge`; kept. */
  | 'dead'
  /** A sender's verification handshake, answered before verification; store and handler untouched. */
  | 'handshake';

/** Header carrying the outcome of every delivery. */
export const OUTCOME_HEADER = 'Onceonly-Outcome';
/** Header present when onceonly could not keep its full promise (fail-open, confirm failed, ...). */
export const DEGRADED_HEADER = 'Onceonly-Degraded';
/**
 * Header present when the run took over a lease that ran out (attempt 2 and up): an earlier run
 * crashed or stalled, and may have applied part of its effects. Fence your writes with the attempt.
 */
export const ATTEMPT_HEADER = 'Onceonly-Attempt';

const MESSAGES: Partial<Record<Outcome, string>> = {
  failed: 'the handler failed; the event was released for the retry',
  conflict: 'this event id was already seen with a different body',
  'store-unavailable': 'the dedup store is unavailable; retry later',
  'too-large': 'the request body is too large',
};

/** Outcome headers (and `Retry-After`) for a result: what adapters set on their own responses. */
export function outcomeHeaders(
  result: DeliveryResult,
  extra?: Record<string, string>,
): Record<string, string> {
  const headers: Record<string, string> = { [OUTCOME_HEADER]: result.outcome, ...extra };
  if (result.degraded) headers[DEGRADED_HEADER] = result.degraded;
  if (result.attempt !== undefined && result.attempt > 1) headers[ATTEMPT_HEADER] = String(result.attempt);
  if (result.retryAfter !== undefined) headers['Retry-After'] = String(result.retryAfter);
  // What a webhook route takes, whichever path refused the method (fetch, receive, an adapter).
  if (result.code === 'method_not_allowed') headers.Allow = 'POST';
  return headers;
}

/**
 * The JSON body for a result. Rejections carry their stable code and a message written for the
 * provider's delivery log; nothing carries a secret, a signature, a handler error or a stack.
 */
export function outcomeBody(result: DeliveryResult): { outcome: Outcome; code?: string; message?: string } {
  const body: { outcome: Outcome; code?: string; message?: string } = { outcome: result.outcome };
  if (result.code) body.code = result.code;
  if (result.outcome === 'rejected' && result.error instanceof OnceonlyError) {
    body.message = result.error.message;
  } else {
    const message = MESSAGES[result.outcome];
    if (message) body.message = message;
  }
  return body;
}

/** The web `Response` for a result; the handler's own response passes through with the outcome headers added. */
export function toResponse(result: DeliveryResult, extra?: Record<string, string>): Response {
  const headers = outcomeHeaders(result, extra);
  // The rest of a refused body was never read: close the connection rather than leave it for reuse.
  if (result.outcome === 'too-large' || result.code === 'body_timeout') headers.Connection = 'close';
  if (result.response) {
    const response = result.response;
    try {
      for (const [name, value] of Object.entries(headers)) response.headers.set(name, value);
      return response;
    } catch {
      // Immutable headers (a Response from fetch()): copy it.
      const copy = new Response(response.body, response);
      for (const [name, value] of Object.entries(headers)) copy.headers.set(name, value);
      return copy;
    }
  }
  headers['Content-Type'] = 'application/json';
  headers['Cache-Control'] = 'no-store';
  return new Response(JSON.stringify(outcomeBody(result)), { status: result.status, headers });
}
