import { OnceonlyError } from '../errors.js';
import { joined } from './body.js';
import type { DeliveryResult, Outcome } from './result.js';

export type { Outcome } from './result.js';

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

/** What the receiver that took a `Response` from its handler says of it: see {@link watchResponse}. */
export interface ResponseWatch {
  /** Told why the `Response` could not be sent. */
  readonly warn: (message: string) => void;
  /** How long its body may take to be read where it is read whole (the Node adapters). */
  readonly readMs: number;
}

/**
 * The handler's own `Response`s, with who hears of one that cannot be sent and how long it may
 * take to read (a handler's `Response` is rare: nothing is registered for the outcome replies
 * every other delivery gets).
 */
const responseWatches = new WeakMap<Response, ResponseWatch>();

/** Registers `watch` for the handler's own `response` (see `unsendable`); returns `response`. */
export function watchResponse(response: Response, watch: ResponseWatch): Response {
  responseWatches.set(response, watch);
  return response;
}

/**
 * The result to answer instead when the handler's own `Response` cannot be sent (its body read
 * already, failing, too large, or not ending in time): the outcome's own reply. The event was
 * handled and confirmed, so the answer stays the outcome's (a 200 for `processed`), and the
 * receiver's logger hears why the handler's `Response` was dropped.
 */
export function unsendable(result: DeliveryResult, why: string): DeliveryResult {
  const response = result.response;
  if (response) {
    responseWatches
      .get(response)
      ?.warn(
        `onceonly: ${result.provider} ${result.outcome} event ${result.id ?? '(no id)'} (key ${result.key ?? 'none'}): the handler's own Response could not be sent (${why}); answered with the outcome instead`,
      );
  }
  return { ...result, response: undefined };
}

/** Why a handler's own `Response` cannot be sent at all, if it cannot. */
function cannotSend(response: Response): string | undefined {
  // Read already (a Response kept in a constant and returned twice, say): it cannot be sent again.
  if (response.bodyUsed || response.body?.locked) return 'its body was read already';
  // Response.error() (status 0, type error), or any status no answer can carry.
  if (response.type === 'error' || response.status < 200 || response.status > 599) {
    return `its status ${response.status} cannot be answered`;
  }
  return undefined;
}

/** The codings `fetch()` decodes (undici: gzip, deflate, br). */
const DECODED_CODINGS = new Set(['gzip', 'x-gzip', 'deflate', 'br', 'identity']);

/**
 * A `Response` whose body is the bytes `fetch()` decoded: its `Content-Encoding` describes the
 * bytes on the wire, not these. A `Response` the handler built itself (`type` `default`) keeps
 * every header as set, and so does one in a coding `fetch()` leaves as it came.
 */
function decodedBody(response: Response): boolean {
  if (response.type === 'default' || response.body === null) return false;
  const codings = response.headers.get('content-encoding');
  if (codings === null) return false;
  return codings.split(',').every((coding) => DECODED_CODINGS.has(coding.trim().toLowerCase()));
}

/** How large the handler's own `Response` may be, and how long it may take to read when unregistered. */
const ANSWER_BYTES = 1_048_576;
const ANSWER_READ_MS = 5_000;
/** Headers of a message's framing and connection, never passed on with bytes read whole. */
const HOP_BY_HOP = [
  'connection',
  'content-length',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
];
/** Statuses whose `Response` cannot carry a body. */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * The answer for a result, as {@link toResponse} makes it, with the handler's own `Response` read
 * whole first: at most 1 MiB, within the handler's timeout (at most 5 s). One that cannot be (read
 * already, failing, larger, or never ending) is answered with the outcome's own reply instead, and
 * the receiver's logger hears why: the event was handled, so the answer must leave, whole, with the
 * outcome's status. What every adapter sends; never rejects.
 */
export async function answerOf(result: DeliveryResult, extra?: Record<string, string>): Promise<Response> {
  const response = result.response;
  // One that cannot be sent at all: toResponse answers the outcome for it.
  if (!response || cannotSend(response) !== undefined) return toResponse(result, extra);
  let read: Response;
  try {
    const body = await readWhole(response, responseWatches.get(response)?.readMs ?? ANSWER_READ_MS);
    // The bytes are whole now, and the runtime frames them: no header of the framing the handler's
    // Response came with (a proxied fetch() Response's Transfer-Encoding, its hop-by-hop headers)
    // goes on, nor the encoding of bytes fetch() decoded.
    const headers = new Headers(response.headers);
    for (const name of HOP_BY_HOP) headers.delete(name);
    if (decodedBody(response)) headers.delete('content-encoding');
    read = new Response(NULL_BODY.has(response.status) ? null : (body as BodyInit | null), {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  } catch (error) {
    return toResponse(unsendable(result, error instanceof Error ? error.message : String(error)), extra);
  }
  return toResponse({ ...result, response: read }, extra);
}

/** A body's bytes, at most {@link ANSWER_BYTES}, within `readMs` (else it rejects and cancels the body). */
async function readWhole(response: Response, readMs: number): Promise<Uint8Array | null> {
  if (response.body === null) return null;
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`its body was not read in ${readMs} ms`)), readMs);
  });
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), late]);
      if (done) break;
      if (!(value instanceof Uint8Array)) throw new Error('its body stream gave something other than bytes');
      size += value.byteLength;
      if (size > ANSWER_BYTES) throw new Error('its body is over 1 MiB');
      chunks.push(value);
    }
  } catch (error) {
    reader.cancel().catch(() => {});
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return joined(chunks, size);
}

/** The web `Response` for a result; the handler's own response passes through with the outcome headers added. */
export function toResponse(result: DeliveryResult, extra?: Record<string, string>): Response {
  const why = result.response && cannotSend(result.response);
  if (why !== undefined) return toResponse(unsendable(result, why), extra);
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
