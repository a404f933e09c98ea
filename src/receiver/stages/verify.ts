/**
 * The stages before the store: screen a delivery (its size, a verification handshake, its method),
 * then verify it (`provider.verify`, over the raw bytes). Nothing here touches the store or the
 * handler. Each answers at once when it can, and with a promise only when the provider's own step is
 * asynchronous: no async frame of their own on the path of every delivery.
 */
import type { TelemetryRun } from '../../core/telemetry.js';
import { BodyTooLargeError, VerificationError } from '../../errors.js';
import type { HandshakeAnswer, Verified } from '../../providers/types.js';
import type { ReceiverCore } from '../core.js';
import { type Done, rejection } from '../outcome.js';
import type { DeliveryResult } from '../result.js';
import { type Arrival, isPromise } from '../work.js';

/**
 * A delivery verification refused, with its outcome: a class of its own, so nothing a provider's
 * `verify` returns can be taken for one.
 */
export class Refused {
  constructor(readonly result: DeliveryResult) {}
}

/** Refused 405: webhooks are POSTs (a handshake GET aside). */
export function methodNotAllowed(): VerificationError {
  return new VerificationError('method_not_allowed', 'onceonly: webhooks are delivered with POST');
}

/**
 * A delivery over the size bound (413), a verification handshake the provider answers (before the
 * method check and before verification), a method other than POST (405): the outcome; undefined
 * when the delivery goes on to verification.
 */
export function screen(
  core: ReceiverCore,
  a: Arrival,
  done: Done,
): DeliveryResult | undefined | Promise<DeliveryResult | undefined> {
  if (a.bytes.byteLength > core.maxBodyBytes)
    return rejection(new BodyTooLargeError(core.maxBodyBytes), done);
  const { handshake } = core;
  if (handshake) {
    let answer: HandshakeAnswer | undefined | Promise<HandshakeAnswer | undefined>;
    try {
      answer = handshake({
        method: a.method,
        rawBody: a.bytes,
        headers: a.headers,
        url: a.url,
        receivedAt: a.receivedAt,
      });
    } catch (error) {
      return rejection(error, done);
    }
    if (isPromise(answer)) {
      // As `await` takes it: a thenable whose `then` throws is a rejection, not a crash.
      return Promise.resolve(answer).then(
        (settled) => handshaken(settled, a, done),
        (error: unknown) => rejection(error, done),
      );
    }
    return handshaken(answer, a, done);
  }
  return a.method === 'POST' ? undefined : rejection(methodNotAllowed(), done);
}

function handshaken(answer: HandshakeAnswer | undefined, a: Arrival, done: Done): DeliveryResult | undefined {
  if (answer) return done('handshake', answer.status ?? 200, { response: handshakeResponse(answer) });
  return a.method === 'POST' ? undefined : rejection(methodNotAllowed(), done);
}

/** The response a provider's handshake answer stands for: text as text/plain, anything else as JSON. */
function handshakeResponse(answer: HandshakeAnswer): Response {
  const headers = new Headers(answer.headers);
  headers.set('cache-control', 'no-store');
  let body: string | null = null;
  if (typeof answer.body === 'string') {
    body = answer.body;
    if (!headers.has('content-type')) headers.set('content-type', 'text/plain; charset=utf-8');
  } else if (answer.body !== undefined) {
    body = JSON.stringify(answer.body);
    if (!headers.has('content-type')) headers.set('content-type', 'application/json');
  }
  return new Response(body, { status: answer.status ?? 200, headers });
}

/**
 * The provider's verification over the raw bytes, timed as the `verify` phase: the verified
 * delivery, or the rejection (as a promise when the provider's verify is asynchronous).
 */
export function verify(
  core: ReceiverCore,
  a: Arrival,
  done: Done,
  run: TelemetryRun | undefined,
): Verified<unknown> | Refused | Promise<Verified<unknown> | Refused> {
  const verifying = run?.phase('verify');
  let pending: Verified<unknown> | Promise<Verified<unknown>>;
  try {
    pending = core.provider.verify({
      rawBody: a.bytes,
      headers: a.headers,
      url: a.url,
      receivedAt: a.receivedAt,
    });
  } catch (error) {
    verifying?.end(error);
    return new Refused(rejection(error, done));
  }
  if (!isPromise(pending)) {
    verifying?.end();
    return pending;
  }
  // As `await` takes it: a thenable whose `then` throws is a rejection, not a crash.
  return Promise.resolve(pending).then(
    (verified) => {
      verifying?.end();
      return verified;
    },
    (error: unknown) => {
      verifying?.end(error);
      return new Refused(rejection(error, done));
    },
  );
}
