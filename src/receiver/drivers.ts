/**
 * The receiver's modes as small drivers over the stages (stages/): a delivery (`deliver`: screen →
 * verify → key → claim and run, or accept into the inbox, or a batch of both), read from
 * `receive()`'s input or a web `Request` (`receive`, `fetch`), with or without telemetry; and a
 * worker's run of one taken entry (`runTaken`). No middleware chain: each step is a plain call, and
 * the inline path has the same async frames as one function would (deliver, then the claim's).
 */
import { parsePositiveDuration } from '../core/duration.js';
import type { InboxJob } from '../core/inbox.js';
import type { TelemetryRun } from '../core/telemetry.js';
import { ConfigError } from '../errors.js';
import type { HeaderReader } from '../providers/types.js';
import { unstamped } from './accepted-by.js';
import { type BodySource, readBody, readBounded, toBytes, toHeaderReader } from './body.js';
import { type ReceiverCore, rejectionResult, storeError } from './core.js';
import { Delivery } from './delivery.js';
import { answerOf, toResponse } from './http.js';
import { type Done, doneFor, type Known } from './outcome.js';
import type { DeliveryResult } from './result.js';
import { acceptEntry } from './stages/accept.js';
import { runBatch } from './stages/batch.js';
import { runJob } from './stages/job.js';
import { keyOf } from './stages/key.js';
import { settle } from './stages/settle.js';
import { methodNotAllowed, Refused, screen, verify } from './stages/verify.js';
import type { ReceiveInput } from './types.js';
import { type Arrival, isPromise } from './work.js';

const EMPTY = new Uint8Array(0);

// Not async, nor is receive(): each async frame on the path of every delivery costs a generator
// and its promise.
/** One delivery, read: its outcome, reported. Never rejects. */
export function pipeline(core: ReceiverCore, a: Arrival): Promise<DeliveryResult> {
  const base = core.known();
  const done = doneFor(base, a.started, core.report);
  if (core.runInfo) return traced(core, a, base, done);
  // No input may make receive() or fetch() reject: whatever slipped through is a typed outcome
  // (deliver is async: a throw inside it is a rejection).
  return deliver(core, a, base, done, undefined).then(undefined, (error) =>
    done('failed', 500, { code: 'internal_error', error }),
  );
}

/** The pipeline with telemetry: the delivery runs inside its telemetry run's context. */
async function traced(core: ReceiverCore, a: Arrival, base: Known, done: Done): Promise<DeliveryResult> {
  const run = core.telemetry!.start(core.runInfo!);
  let result: DeliveryResult;
  try {
    result = await run.wrap(() => deliver(core, a, base, done, run));
  } catch (error) {
    result = done('failed', 500, { code: 'internal_error', error });
  }
  run.end(result);
  return result;
}

/** The stages of one delivery, in order; each may end it with its outcome. */
async function deliver(
  core: ReceiverCore,
  a: Arrival,
  base: Known,
  done: Done,
  run: TelemetryRun | undefined,
): Promise<DeliveryResult> {
  // 0. Size, a verification handshake, the method: never touching the store or the handler.
  const screened = screen(core, a, done);
  const early = isPromise(screened) ? await screened : screened;
  if (early) return early;
  // 1. Verify. Nothing touches the store before this succeeds.
  const checked = verify(core, a, done, run);
  const verified = isPromise(checked) ? await checked : checked;
  if (verified instanceof Refused) return verified.result;
  const delivery = new Delivery(a.bytes, a.receivedAt, a.headers);
  // What the inbox keeps carries the telemetry run: made only where it is kept.
  if (verified.batch) return runBatch(core, verified.batch, delivery, run ? { ...a, run } : a);
  // 2. Key and fingerprint.
  const keyed = keyOf(core, verified, a.bytes, base, done, run);
  if (isPromise(keyed) || 'outcome' in keyed) return keyed;
  // A deadline of the caller's own (a serverless invocation's end) goes with the event.
  const e = a.timeoutMs === undefined ? keyed : { ...keyed, timeoutMs: a.timeoutMs };
  // 3. Inbox mode: write it durably and answer (hybrid: run it first within the budget).
  if (core.policy) return acceptEntry(core, e, run ? { ...a, run } : a, delivery, done);
  // 3. Claim, run, confirm or release.
  return settle(core, e, delivery, done);
}

/** `receiver.receive()`: a misuse (a bad receivedAt) rejects; a bad delivery never does. */
export function receive(core: ReceiverCore, input: ReceiveInput): Promise<DeliveryResult> {
  let started: number;
  let receivedAt: Date | undefined;
  let method: string;
  let timeoutMs: number | undefined;
  try {
    started = Date.now();
    timeoutMs =
      input.timeout === undefined ? undefined : parsePositiveDuration(input.timeout, 'receive() timeout');
    receivedAt = input.receivedAt;
    if (receivedAt !== undefined && !(receivedAt instanceof Date && Number.isFinite(receivedAt.getTime()))) {
      // A bad receivedAt must never switch the timestamp tolerance off: refuse it before anything runs.
      throw new ConfigError(
        'invalid_option',
        `onceonly: receive() needs receivedAt as a valid Date (when the delivery arrived), got ${String(receivedAt)}`,
      );
    }
    method = methodOf(input.method);
  } catch (error) {
    // A misuse rejects (as the async function this was did); a bad delivery never does.
    return Promise.reject(error);
  }
  // Without a handshake a request that is not a POST is refused before anything is read.
  if (method !== 'POST' && !core.handshake) {
    return Promise.resolve(rejectionResult(core, methodNotAllowed(), started));
  }
  let bytes: Uint8Array = EMPTY;
  let headers: HeaderReader;
  let reading: Promise<Uint8Array> | undefined;
  try {
    headers = toHeaderReader(input.headers);
    const raw = input.rawBody;
    if (bodiless(method)) bytes = EMPTY;
    else if (isBodySource(raw))
      reading = readBounded(raw, core.maxBodyBytes, headers.get('content-length'), core.bodyTimeoutMs);
    else bytes = toBytes(raw);
  } catch (error) {
    return Promise.resolve(rejectionResult(core, error, started));
  }
  if (!reading) {
    return pipeline(core, {
      bytes,
      headers,
      url: input.url,
      receivedAt: receivedAt ?? new Date(),
      method,
      started,
      timeoutMs,
    });
  }
  // Received once the whole body is: as fetch() and as it always was for a stream.
  return reading.then(
    (read) =>
      pipeline(core, {
        bytes: read,
        headers,
        url: input.url,
        receivedAt: receivedAt ?? new Date(),
        method,
        started,
        timeoutMs,
      }),
    (error: unknown) => rejectionResult(core, error, started),
  );
}

/** `receiver.fetch()`: a web `Request` in, its `Response` out. Never rejects. */
export async function fetchResponse(core: ReceiverCore, request: Request): Promise<Response> {
  const started = Date.now();
  const method = methodOf(request.method);
  if (method !== 'POST' && !core.handshake) {
    return toResponse(rejectionResult(core, methodNotAllowed(), started));
  }
  let bytes: Uint8Array;
  try {
    bytes = bodiless(method) ? EMPTY : await readBody(request, core.maxBodyBytes, core.bodyTimeoutMs);
  } catch (error) {
    return toResponse(rejectionResult(core, error, started));
  }
  const result = await pipeline(core, {
    bytes,
    headers: request.headers,
    url: request.url,
    receivedAt: new Date(),
    method,
    started,
  });
  return result.response ? answerOf(result) : toResponse(result);
}

/** A worker's run of one taken entry, inside its own telemetry run (linked to the accepting delivery) when telemetry is on. */
export function runTaken(
  core: ReceiverCore,
  job: InboxJob,
  takenAt: number,
  handlerEnded?: () => void,
): Promise<DeliveryResult> {
  return core.runInfo
    ? runTakenTraced(core, job, takenAt, handlerEnded)
    : runJob(core, job, takenAt, undefined, handlerEnded);
}

async function runTakenTraced(
  core: ReceiverCore,
  job: InboxJob,
  takenAt: number,
  handlerEnded: (() => void) | undefined,
): Promise<DeliveryResult> {
  const run = core.telemetry!.start({
    ...core.runInfo!,
    kind: 'inbox',
    headers: unstamped(job.headers).headers,
  });
  let result: DeliveryResult;
  try {
    result = await run.wrap(() => runJob(core, job, takenAt, run, handlerEnded));
  } catch (error) {
    run.end({ outcome: 'failed', status: 500, code: 'internal_error', error });
    throw error;
  }
  run.end(result);
  return result;
}

/** A worker's take that failed: reported as the store being unavailable. */
export function takeFailed(core: ReceiverCore, error: unknown): void {
  const e = storeError(error);
  doneFor(core.known(), Date.now(), core.report)('store-unavailable', 503, { code: e.code, error: e });
}

function methodOf(method: string | undefined): string {
  return method === undefined ? 'POST' : method.toUpperCase();
}

/** GET and HEAD carry no body: it is never read. */
function bodiless(method: string): boolean {
  return method === 'GET' || method === 'HEAD';
}

function isBodySource(value: unknown): value is BodySource {
  if (
    value === null ||
    typeof value !== 'object' ||
    value instanceof Uint8Array ||
    value instanceof ArrayBuffer
  )
    return false;
  return Symbol.asyncIterator in value || typeof (value as ReadableStream).getReader === 'function';
}
