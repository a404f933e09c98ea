import {
  BodyAlreadyParsedError,
  BodyTimeoutError,
  BodyTooLargeError,
  ConfigError,
  OnceonlyError,
  StoreUnavailableError,
  VerificationError,
} from '../errors.js';
import { sha256Hex } from '../lease/crypto.js';
import { type Duration, parsePositiveDuration } from '../lease/duration.js';
import { type DegradedReason, runClaimed, type WorkContext } from '../lease/engine.js';
import { resolveTimings } from '../lease/timings.js';
import type { Lease, Store } from '../lease/types.js';
import type { BatchItem, EventMapOf, EventOf, HeaderReader, Provider, Verified } from '../providers/types.js';
import {
  asWebHeaders,
  type BodySource,
  type HeadersInput,
  type RawBody,
  readBody,
  readBounded,
  toBytes,
  toHeaderReader,
} from './body.js';
import { type Outcome, toResponse } from './http.js';

export type { Outcome } from './http.js';

/** What a handler receives for one verified delivery. */
export interface HandlerContext<E> {
  /** The verified event. */
  readonly event: E;
  /** The event type, when the provider has one. */
  readonly type: string | undefined;
  /** The provider's event id, when it sends one. */
  readonly id: string | undefined;
  /** The dedup key (`undefined` for an unkeyed delivery). */
  readonly key: string | undefined;
  /** 1 on the first run, +1 after each takeover of a crashed run: a fencing number for your writes. */
  readonly attempt: number;
  /** Aborted at the deadline or when the lease is lost: stop, and do not commit. */
  readonly signal: AbortSignal;
  /** The lease held while the handler runs; `undefined` when running without dedup (unkeyed, fail-open). */
  readonly lease: Lease | undefined;
  /** The raw delivery. */
  readonly delivery: { readonly rawBody: Uint8Array; readonly headers: Headers; readonly receivedAt: Date };
}

/** A handler may return its own `Response` (used for `processed`); any other value is ignored. */
export type Handler<E> = (ctx: HandlerContext<E>) => unknown;

/** The result of one delivery, passed to `onOutcome` and returned by `receive()`. */
export interface DeliveryResult {
  readonly outcome: Outcome;
  /** The HTTP status the provider gets. */
  readonly status: number;
  /** Why the outcome is degraded (onceonly could not keep its full promise), if it is. */
  readonly degraded: DegradedReason | undefined;
  /** Stable code for rejected, too-large, store-unavailable and failed outcomes. */
  readonly code: string | undefined;
  readonly provider: string;
  readonly key: string | undefined;
  readonly id: string | undefined;
  readonly type: string | undefined;
  readonly attempt: number | undefined;
  /** The error behind a rejected, failed or store-unavailable outcome (for your logs, never sent). */
  readonly error: unknown;
  /** The handler's own response, when it returned one. */
  readonly response: Response | undefined;
  /** Seconds the provider is asked to wait before retrying (in-flight, store-unavailable). */
  readonly retryAfter: number | undefined;
  /** Wall time spent on the delivery, in ms. */
  readonly durationMs: number;
  /**
   * For a delivery carrying several events (SendGrid), each event's own result, in order (each was
   * also passed to `onOutcome`); the fields above then describe the batch as a whole.
   */
  readonly batch?: readonly DeliveryResult[] | undefined;
}

export interface ReceiverOptions<P extends Provider<any, any>> {
  /** Verifies deliveries and says what to key them on. @example stripe({ secret: process.env.STRIPE_WEBHOOK_SECRET! }) */
  provider: P;
  /** Where claims live. @example redisStore({ client }) */
  store: Store;
  /** Runs for every verified, first-seen event. Give this or `on`. */
  handler?: Handler<EventOf<P>>;
  /**
   * Handlers by event type. A type with no handler is acknowledged with outcome `ignored`
   * without touching the store.
   * @example on: { 'invoice.paid': async ({ event }) => grant(event.data.object.customer) }
   */
  on?: { [K in keyof EventMapOf<P> & string]?: Handler<EventMapOf<P>[K]> };
  /**
   * Another delivery of the event is running now. `'retry'` answers 409 with `Retry-After` so the
   * provider comes back (safe: if the running one fails, the retry does the work);
   * `'acknowledge'` answers 200 and trusts the running one to finish.
   * @default 'retry'
   */
  onInFlight?: 'retry' | 'acknowledge';
  /**
   * The store is unreachable or erroring. `'closed'` answers 503 with `Retry-After`: nothing is
   * lost or doubled, only delayed. `'open'` runs the handler without dedup and marks the outcome
   * degraded (header, `degraded` field, `onOutcome`): nothing is lost, but a duplicate may run.
   * @default 'closed'
   */
  onStoreError?: 'closed' | 'open';
  /**
   * The same key arrived with a different body: a forged or corrupted delivery. `'reject'` answers
   * 422; `'acknowledge'` answers 200. Either way the handler does not run and `onOutcome` sees it.
   * @default 'reject'
   */
  onConflict?: 'reject' | 'acknowledge';
  /**
   * The provider gave no usable id and no digest applies. `'process'` runs the handler without dedup;
   * `'reject'` answers 422 with code `unkeyed`.
   * @default 'process'
   */
  onUnkeyed?: 'process' | 'reject';
  /**
   * The largest body read, in bytes; larger ones get 413 before more is buffered.
   * @default 1_048_576 (1 MiB)
   */
  maxBodyBytes?: number;
  /**
   * How long the handler may run before its signal aborts and the delivery fails (claim released).
   * @default '30s'
   */
  timeout?: Duration;
  /**
   * How long a claim lives unless extended (it is extended while the handler runs). It must
   * outlast the longest run the route allows, since a handler killed at its deadline is exactly the
   * crash the lease covers; tie it to that ceiling, not to the p99.
   * @default 4 × timeout
   */
  lease?: Duration;
  /** How long a completed event is remembered. @default the provider's retry window plus a margin */
  retention?: Duration;
  /**
   * How long the whole body may take to arrive; a slower sender gets 408 (code `body_timeout`) and
   * nothing is claimed.
   * @default '10s'
   */
  bodyTimeout?: Duration;
  /** `Retry-After` sent with 503 when the store is unavailable. @default '5s' */
  retryAfter?: Duration;
  /**
   * Called for every delivery, whatever its outcome. Errors it throws are swallowed. Without it,
   * the outcomes that must not pass unseen (lease lost, conflict, degraded, a body another parser
   * consumed) are logged with `console.warn`; `warningFor(result)` gives the same line for your logger.
   * @default undefined (those outcomes go to console.warn)
   * @example onOutcome: (result) => { metrics.count(result.outcome); const w = warningFor(result); if (w) log.warn(w); }
   */
  onOutcome?: (result: DeliveryResult) => unknown;
}

export interface ReceiveInput {
  /**
   * The exact bytes of the body, or a stream still to be read (a Node `IncomingMessage`, a web
   * `ReadableStream`): a stream is read with the `maxBodyBytes` bound, refusing a declared
   * Content-Length over it before reading anything.
   */
  rawBody: RawBody | BodySource;
  headers: HeadersInput;
  /** The full URL the provider called (Twilio and Square sign it). */
  url?: string;
  /** When the delivery was received (for queued processing); timestamp tolerance is measured from it. @default now */
  receivedAt?: Date;
}

export interface Receiver {
  /** The body size limit in bytes, for adapters that must enforce it while reading. */
  readonly maxBodyBytes: number;
  /** Web-standard handler: Next.js route handlers, Hono, Bun, Deno, Workers. */
  fetch(request: Request): Promise<Response>;
  /** Framework-free: give the raw body and headers, get the outcome and the response to send. */
  receive(input: ReceiveInput): Promise<DeliveryResult>;
}

const DEFAULT_MAX_BODY = 1024 * 1024;

/**
 * One line for the outcomes that must never pass unseen (lease lost, conflict, degraded, a body
 * another parser consumed), or undefined. Names the key and attempt, never a secret or body.
 */
export function warningFor(result: DeliveryResult): string | undefined {
  const at = `${result.key ?? result.provider}${result.attempt ? ` (attempt ${result.attempt})` : ''}`;
  if (result.outcome === 'lease-lost')
    return `onceonly: lease-lost for ${at}: the handler finished after its lease ran out and another delivery took over; fence your writes with attempt, or raise lease`;
  if (result.outcome === 'conflict')
    return `onceonly: conflict for ${at}: the same event id arrived with another body (a forgery or a corrupted retry)`;
  if (result.degraded)
    return `onceonly: ${result.outcome} for ${at} is degraded (${result.degraded}): the event may run again; check the store`;
  if (result.code === 'body_already_parsed' && result.error instanceof Error)
    return `onceonly: ${result.error.message.replace(/^onceonly: /, '')}`;
  return undefined;
}

/**
 * Receives webhooks safely: verify over the raw bytes, claim the event under a short lease, run the
 * handler, confirm for the provider's retry window or release for the retry.
 *
 * @example
 * const receiver = createReceiver({
 *   provider: stripe({ secret: process.env.STRIPE_WEBHOOK_SECRET! }),
 *   store: memoryStore(),
 *   on: { 'invoice.paid': async ({ event }) => markPaid(event.data.object.id) },
 * });
 * export const POST = receiver.fetch;
 */
export function createReceiver<P extends Provider<any, any>>(options: ReceiverOptions<P>): Receiver {
  const { provider, store } = options;
  if (!provider || typeof provider.verify !== 'function') {
    throw new ConfigError(
      'invalid_option',
      'onceonly: createReceiver needs a provider, e.g. stripe({ secret })',
    );
  }
  if (!store || typeof store.claim !== 'function') {
    throw new ConfigError('invalid_option', 'onceonly: createReceiver needs a store, e.g. memoryStore()');
  }
  if (!options.handler && !options.on) {
    throw new ConfigError(
      'invalid_option',
      'onceonly: createReceiver needs a handler or an `on` map of handlers',
    );
  }
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes < 1) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: maxBodyBytes must be a positive integer, got ${maxBodyBytes}`,
    );
  }
  const timings = resolveTimings(options);
  const retentionMs = timings.retentionMs ?? provider.retentionMs;
  const bodyTimeoutMs = parsePositiveDuration(options.bodyTimeout ?? '10s', 'bodyTimeout');
  const retryAfterS = Math.max(
    1,
    Math.ceil(resolveTimings({ timeout: options.retryAfter ?? '5s' }).timeoutMs / 1000),
  );
  const onInFlight = options.onInFlight ?? 'retry';
  const onStoreError = options.onStoreError ?? 'closed';
  const onConflict = options.onConflict ?? 'reject';
  const onUnkeyed = options.onUnkeyed ?? 'process';
  const handlers = (options.on ?? {}) as Record<string, Handler<unknown> | undefined>;

  function pickHandler(type: string | undefined): Handler<unknown> | undefined {
    const byType =
      type === undefined ? undefined : Object.hasOwn(handlers, type) ? handlers[type] : undefined;
    return byType ?? (options.handler as Handler<unknown> | undefined);
  }

  function report(result: DeliveryResult): DeliveryResult {
    // The cases someone must hear about are never silent: without an onOutcome they are logged.
    if (!options.onOutcome) {
      const warning = warningFor(result);
      if (warning) console.warn(warning);
    } else {
      try {
        const pending = options.onOutcome(result) as PromiseLike<unknown> | undefined;
        if (pending && typeof pending.then === 'function') pending.then(undefined, () => {});
      } catch {
        // An observer's bug must not change what the provider is told.
      }
    }
    return result;
  }

  async function pipeline(
    bytes: Uint8Array,
    headers: HeaderReader,
    url: string | undefined,
    receivedAt: Date,
    started: number,
  ) {
    const base = {
      provider: provider.name,
      key: undefined as string | undefined,
      id: undefined as string | undefined,
      type: undefined as string | undefined,
      attempt: undefined as number | undefined,
      degraded: undefined as DegradedReason | undefined,
      code: undefined as string | undefined,
      error: undefined as unknown,
      response: undefined as Response | undefined,
      retryAfter: undefined as number | undefined,
    };
    const done = (outcome: Outcome, status: number, extra: Partial<typeof base> = {}): DeliveryResult =>
      report({ ...base, ...extra, outcome, status, durationMs: Date.now() - started });

    // 1. Verify. Nothing touches the store before this succeeds.
    let verified: Verified<unknown>;
    try {
      if (bytes.byteLength > maxBodyBytes) throw new BodyTooLargeError(maxBodyBytes);
      const pending = provider.verify({ rawBody: bytes, headers, url, receivedAt });
      verified = isPromise(pending) ? await pending : pending;
    } catch (error) {
      return rejection(error, done);
    }
    let webHeaders: Headers | undefined;
    const delivery = {
      rawBody: bytes,
      receivedAt,
      // A web Headers only when the handler asks for one (Node's header objects stay as they are).
      get headers(): Headers {
        webHeaders ??= asWebHeaders(headers);
        return webHeaders;
      },
    };
    if (verified.batch) return runBatch(verified.batch, delivery, started);

    base.id = verified.id;
    base.type = verified.type;
    const handler = pickHandler(verified.type);
    if (!handler) return done('ignored', 200);

    // 2. Key and fingerprint.
    const bodyDigest = sha256Hex(bytes);
    // A provider whose retries rewrite a per-attempt field gives a content fingerprint without it.
    const fingerprint = verified.fingerprint ?? bodyDigest;
    let key: string | undefined;
    if (verified.dedup === 'id' && (verified.key ?? verified.id))
      key = `${provider.name}:${verified.key ?? verified.id}`;
    else if (verified.dedup === 'body') key = `${provider.name}:body:${bodyDigest}`;
    base.key = key;
    const event = { event: verified.event, type: verified.type, id: verified.id, key, fingerprint };
    if (key === undefined && onUnkeyed === 'reject') {
      return done('rejected', 422, {
        code: 'unkeyed',
        error: new VerificationError(
          'unkeyed',
          'onceonly: the delivery has no usable event id and onUnkeyed is reject',
        ),
      });
    }
    // 3. Claim, run, confirm or release.
    return settle(handler, event, delivery, done);
  }

  /** One event to run: what the handler sees, and what it is deduplicated on. */
  interface Keyed {
    readonly event: unknown;
    readonly type: string | undefined;
    readonly id: string | undefined;
    /** `undefined`: run without dedup (unkeyed). */
    readonly key: string | undefined;
    readonly fingerprint: string;
  }
  type Done = (outcome: Outcome, status: number, extra?: Partial<DeliveryResult>) => DeliveryResult;

  /** Claims the event's key, runs the handler under its deadline, confirms or releases: one outcome. */
  async function settle(
    handler: Handler<unknown>,
    e: Keyed,
    delivery: HandlerContext<unknown>['delivery'],
    done: Done,
  ): Promise<DeliveryResult> {
    const contextFor = (work: WorkContext | undefined): HandlerContext<unknown> => ({
      event: e.event,
      type: e.type,
      id: e.id,
      key: e.key,
      attempt: work?.attempt ?? 1,
      signal: work?.signal ?? AbortSignal.timeout(timings.timeoutMs),
      lease: work?.lease,
      delivery,
    });
    if (e.key === undefined) return runUnguarded('unkeyed', undefined);

    let result: Awaited<ReturnType<typeof runClaimed<unknown>>>;
    try {
      result = await runClaimed(store, e.key, (work) => handler(contextFor(work)), {
        leaseMs: timings.leaseMs,
        timeoutMs: timings.timeoutMs,
        retentionMs,
        fingerprint: e.fingerprint,
      });
    } catch (cause) {
      const error =
        cause instanceof StoreUnavailableError
          ? cause
          : new StoreUnavailableError('store claim failed', { cause });
      if (onStoreError === 'open') return runUnguarded(undefined, 'store-unavailable', error);
      return done('store-unavailable', 503, { code: error.code, error, retryAfter: retryAfterS });
    }

    switch (result.outcome) {
      case 'processed':
        return done('processed', 200, {
          attempt: result.attempt,
          degraded: result.degraded,
          response: asResponse(result.value),
        });
      case 'lease-lost':
        return done('lease-lost', 200, { attempt: result.attempt, response: asResponse(result.value) });
      case 'failed':
        return done('failed', 500, {
          attempt: result.attempt,
          degraded: result.degraded,
          code: failureCode(result.error),
          error: result.error,
        });
      case 'duplicate':
        return done('duplicate', 200);
      case 'in-flight':
        if (onInFlight === 'acknowledge') return done('in-flight', 200, { attempt: result.attempt });
        return done('in-flight', 409, {
          attempt: result.attempt,
          // Come back when the running lease would have run out, within a minute.
          retryAfter: Math.max(1, Math.min(60, Math.ceil((result.expiresAt.getTime() - Date.now()) / 1000))),
        });
      case 'conflict':
        return done('conflict', onConflict === 'reject' ? 422 : 200, { code: 'fingerprint_mismatch' });
    }

    // Run without a lease: unkeyed deliveries, and fail-open when the store is down.
    async function runUnguarded(
      outcome: 'unkeyed' | undefined,
      degraded: DegradedReason | undefined,
      storeError?: unknown,
    ) {
      const timeout = AbortSignal.timeout(timings.timeoutMs);
      try {
        const value = await Promise.race([
          Promise.resolve().then(() =>
            handler(contextFor({ attempt: 1, signal: timeout, lease: undefined as never })),
          ),
          new Promise<never>((_, reject) =>
            timeout.addEventListener('abort', () => reject(timeout.reason), { once: true }),
          ),
        ]);
        return done(outcome ?? 'processed', 200, {
          degraded,
          response: asResponse(value),
          error: storeError,
        });
      } catch (error) {
        return done('failed', 500, { degraded, code: failureCode(error), error });
      }
    }
  }

  /**
   * A delivery carrying several events (SendGrid): each is claimed, run and confirmed on its own key,
   * in order, and reported to `onOutcome` on its own, so a batch that partly failed re-runs only what
   * failed when it comes back. The answer is the batch's worst outcome (503, then 500, then 409, then
   * 422), else 200; with the store down the rest of the batch is left for the retry.
   */
  async function runBatch(
    items: readonly BatchItem<unknown>[],
    delivery: HandlerContext<unknown>['delivery'],
    started: number,
  ): Promise<DeliveryResult> {
    const results: DeliveryResult[] = [];
    for (const item of items) {
      const itemBase = {
        provider: provider.name,
        key: `${provider.name}:${item.id}`,
        id: item.id,
        type: item.type,
        attempt: undefined,
        degraded: undefined,
        code: undefined,
        error: undefined,
        response: undefined,
        retryAfter: undefined,
      };
      const done: Done = (outcome, status, extra = {}) =>
        report({ ...itemBase, ...extra, outcome, status, durationMs: Date.now() - started });
      const handler = pickHandler(item.type);
      const result = handler
        ? await settle(
            handler,
            {
              event: item.event,
              type: item.type,
              id: item.id,
              key: itemBase.key,
              // The event's own content: one event of a batch has no bytes of its own.
              fingerprint: sha256Hex(JSON.stringify(item.event)),
            },
            delivery,
            done,
          )
        : done('ignored', 200, { key: undefined });
      results.push(result);
      if (result.outcome === 'store-unavailable') break;
    }
    return batchResult(results, Date.now() - started);
  }

  async function receive(input: ReceiveInput): Promise<DeliveryResult> {
    const started = Date.now();
    const { receivedAt } = input;
    if (receivedAt !== undefined && !(receivedAt instanceof Date && Number.isFinite(receivedAt.getTime()))) {
      // A bad receivedAt must never switch the timestamp tolerance off: refuse it before anything runs.
      throw new ConfigError(
        'invalid_option',
        `onceonly: receive() needs receivedAt as a valid Date (when the delivery arrived), got ${String(receivedAt)}`,
      );
    }
    let bytes: Uint8Array;
    let headers: HeaderReader;
    try {
      headers = toHeaderReader(input.headers);
      const raw = input.rawBody;
      bytes = isBodySource(raw)
        ? await readBounded(raw, maxBodyBytes, headers.get('content-length'), bodyTimeoutMs)
        : toBytes(raw);
    } catch (error) {
      return rejectionResult(error, started);
    }
    return pipeline(bytes, headers, input.url, receivedAt ?? new Date(), started);
  }

  function rejectionResult(error: unknown, started: number): DeliveryResult {
    const base = {
      provider: provider.name,
      key: undefined,
      id: undefined,
      type: undefined,
      attempt: undefined,
      degraded: undefined,
      response: undefined,
      retryAfter: undefined,
    };
    return rejection(error, (outcome, status, extra) =>
      report({
        ...base,
        code: undefined,
        error: undefined,
        ...extra,
        outcome,
        status,
        durationMs: Date.now() - started,
      }),
    );
  }

  return {
    maxBodyBytes,
    receive,
    async fetch(request: Request): Promise<Response> {
      const started = Date.now();
      if (request.method !== 'POST') {
        const result = rejectionResult(
          new VerificationError('method_not_allowed', 'onceonly: webhooks are delivered with POST'),
          started,
        );
        return toResponse(result, { allow: 'POST' });
      }
      let bytes: Uint8Array;
      try {
        bytes = await readBody(request, maxBodyBytes, bodyTimeoutMs);
      } catch (error) {
        return toResponse(rejectionResult(error, started));
      }
      const result = await pipeline(bytes, request.headers, request.url, new Date(), started);
      return toResponse(result);
    },
  };
}

function rejection(
  error: unknown,
  done: (outcome: Outcome, status: number, extra: { code?: string; error?: unknown }) => DeliveryResult,
): DeliveryResult {
  if (error instanceof BodyTooLargeError) return done('too-large', 413, { code: error.code, error });
  if (error instanceof BodyTimeoutError) return done('rejected', 408, { code: error.code, error });
  // The app's own body parser got there first: an operator error, answered 500 so the provider
  // retries once the app is fixed, with the message naming the line to change.
  if (error instanceof BodyAlreadyParsedError) return done('rejected', 500, { code: error.code, error });
  if (error instanceof VerificationError) return done('rejected', error.status, { code: error.code, error });
  if (error instanceof ConfigError) throw error;
  // A provider that threw something unexpected on hostile input: still a clean 400, never a crash.
  return done('rejected', 400, { code: 'invalid_body', error });
}

/**
 * The one answer for a batch: its worst event (store unavailable, then failed, then in flight, then
 * conflict) when one of them makes the provider retry or is refused; else 200, `processed` when any
 * event ran. Each event's own result is in `batch`.
 */
function batchResult(results: readonly DeliveryResult[], durationMs: number): DeliveryResult {
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
  if (!refused) {
    if (results.some((r) => r.outcome === 'processed' || r.outcome === 'lease-lost')) outcome = 'processed';
    else if (results.every((r) => r.outcome === 'ignored')) outcome = 'ignored';
    else if (results.some((r) => r.outcome === 'duplicate')) outcome = 'duplicate';
  }
  const attempts = results.map((r) => r.attempt ?? 0);
  const waits = results.map((r) => r.retryAfter).filter((w): w is number => w !== undefined);
  return {
    outcome,
    status: refused ? worst.status : 200,
    degraded: results.find((r) => r.degraded)?.degraded,
    code: refused ? worst.code : undefined,
    provider: worst.provider,
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

function failureCode(error: unknown): string {
  return error instanceof OnceonlyError ? error.code : 'handler_failed';
}

function asResponse(value: unknown): Response | undefined {
  return value instanceof Response ? value : undefined;
}

function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as Promise<T> | undefined)?.then === 'function';
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
