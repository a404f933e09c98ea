/**
 * The receiver's public types: what a handler receives, the options of `createReceiver`, what
 * `receive()` takes, and the receiver's methods.
 */
import type { Duration } from '../core/duration.js';
import type { HealthReport } from '../core/health.js';
import type { Logger } from '../core/logger.js';
import type { Jsonified, StepContext } from '../core/steps.js';
import type { Telemetry } from '../core/telemetry.js';
import type { Lease, Store } from '../core/types.js';
import type { EventMapOf, EventOf, Provider } from '../providers/types.js';
import type { BodySource, HeadersInput, RawBody } from './body.js';
import type { InboxOptions } from './inbox.js';
import type { DeliveryResult } from './result.js';
import type { InboxWorker, WorkerOptions } from './worker-loop.js';

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
  /**
   * Runs `fn` once per event and step name: its result (JSON, at most 64 KiB) is stored under the
   * event's key before the handler goes on, and a later run of the same event (after a throw, a
   * deadline, a crash and takeover) gets it back without running `fn` again. A step that threw runs
   * again on the next attempt. The result is what JSON makes of it, on every run alike. Without a
   * lease (unkeyed, fail-open) steps run every time. See docs/reliability.md (Pattern 3).
   * @example const paymentId = await ctx.step('charge', ({ idempotencyKey }) =>
   *   stripe.paymentIntents.create(params, { idempotencyKey }).then((pi) => pi.id));
   */
  step<R>(name: string, fn: (ctx: StepContext) => R | Promise<R>): Promise<Jsonified<Awaited<R>>>;
  /**
   * A stable key for an API that deduplicates on one (Stripe's `Idempotency-Key`): the same on every
   * attempt and process for this receiver, event and `name`, different across them. `oo_` and 32
   * base64url characters. Throws for an unkeyed delivery, which has none.
   */
  idempotencyKey(name?: string): string;
}

/** A handler may return its own `Response` (used for `processed`); any other value is ignored. */
export type Handler<E> = (ctx: HandlerContext<E>) => unknown;

export interface ReceiverOptions<P extends Provider<any, any>> {
  /** Verifies deliveries and says what to key them on. @example stripe({ secret: process.env.STRIPE_WEBHOOK_SECRET! }) */
  provider: P;
  /** Where claims live. @example redisStore({ client }) */
  store: Store;
  /**
   * The receiver's name and key space: every key it writes starts with `name:`. Two receivers on
   * one store never share keys by accident: a second receiver of the same space on the same store
   * is refused at creation unless it is the same endpoint (same provider and secret, e.g. a module
   * loaded twice) or both set `name` explicitly to share it on purpose (one event delivered through
   * two subscriptions, still run once). 1–64 letters, digits, `.`, `_`, `-`.
   * @default the provider's name (`stripe`, `github`, ...)
   * @example createReceiver({ name: 'stripe-billing', provider: stripe({ secret }), store, handler })
   */
  name?: string;
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
   * The deadline of every store call (claim, extend, confirm, release, record). Past it the call
   * counts as a store error: before the handler, 503 (fail-closed) or a degraded run (fail-open);
   * after it, `confirm-failed` (the confirm is retried in the background while the lease lasts). A
   * frozen or unreachable store then answers within this, never hanging the provider's request.
   * @default '3s' (at most half the lease)
   * @example storeTimeout: '1s'
   */
  storeTimeout?: Duration;
  /**
   * Where failed, store-unavailable, degraded, conflict and lease-lost outcomes are logged, once per
   * delivery with their cause (never a body, signature or secret): failed and store errors with
   * `error`, the others with `warn`. Anything with `warn` and `error` fits (pino, winston);
   * `false` to silence. Logged whether or not `onOutcome` is set.
   * @default console
   * @example logger: pino()
   */
  logger?: Logger | false;
  /**
   * Inbox mode: each verified delivery is written durably (body, headers, type, id, key,
   * fingerprint, receivedAt) under its dedup key in one atomic step and answered 2xx at once
   * (`accepted`); workers (`receiver.startWorker()`) run it under the same fenced leases, retry it
   * with backoff, and bury it after `maxAttempts` or `maxAge` (dead, kept, visible). For senders
   * that never retry (GitHub) or wait only seconds (Shopify 5 s, GitHub 10 s). `inline` makes it
   * hybrid: the handler runs inline first within that budget. The store must have an inbox (every
   * built-in store does).
   * @default undefined (inline mode)
   * @example inbox: { inline: '2s', maxAttempts: 8 }
   */
  inbox?: boolean | InboxOptions;
  /**
   * Called for every delivery, whatever its outcome (metrics, audit). Errors it throws are
   * swallowed. The outcomes that must not pass unseen are logged through `logger` either way.
   * @default undefined
   * @example onOutcome: (result) => metrics.count(result.outcome, { degraded: result.degraded })
   */
  onOutcome?: (result: DeliveryResult) => unknown;
  /**
   * Where every delivery, inbox run and store call is reported as it happens: phases (verify,
   * claim, handler, confirm or release), outcomes, lost leases; the handler runs inside the
   * delivery's context, so its own spans nest. `otel()` from `onceonly/otel` gives OpenTelemetry
   * metrics and spans. Nothing is done per delivery without it.
   * @default undefined
   * @example telemetry: otel()
   */
  telemetry?: Telemetry;
}

export interface ReceiveInput {
  /**
   * The exact bytes of the body, or a stream still to be read (a Node `IncomingMessage`, a web
   * `ReadableStream`): a stream is read with the `maxBodyBytes` bound, refusing a declared
   * Content-Length over it before reading anything.
   */
  rawBody: RawBody | BodySource;
  headers: HeadersInput;
  /** The full URL the provider called, query string included (Twilio and Square sign it; handshakes read it). */
  url?: string;
  /** When the delivery was received (for queued processing); timestamp tolerance is measured from it. @default now */
  receivedAt?: Date;
  /**
   * The request's HTTP method. Anything but POST is refused (405 `method_not_allowed`) unless the
   * provider answers it as a verification handshake (Meta's `hub.challenge` GET); a GET or HEAD
   * body is never read.
   * @default 'POST'
   * @example receiver.receive({ rawBody: req, headers: req.headers, url, method: req.method })
   */
  method?: string;
  /**
   * A shorter deadline for this delivery's handler: the shorter of this and the receiver's
   * `timeout` applies. For a caller that must answer by a time of its own, such as a serverless
   * function whose invocation ends (`onceonly/lambda` passes the invocation's remaining time less a
   * margin), so the handler is aborted and its claim released before the caller is stopped.
   * @default the receiver's `timeout`
   * @example receiver.receive({ rawBody, headers, url, timeout: context.getRemainingTimeInMillis() - 1000 })
   */
  timeout?: Duration;
}

export interface Receiver {
  /** The body size limit in bytes, for adapters that must enforce it while reading. */
  readonly maxBodyBytes: number;
  /** Web-standard handler: Next.js route handlers, Hono, Bun, Deno, Workers. */
  fetch(request: Request): Promise<Response>;
  /** Framework-free: give the raw body and headers, get the outcome and the response to send. */
  receive(input: ReceiveInput): Promise<DeliveryResult>;
  /**
   * Inbox mode: starts a worker in this process that runs due entries of this receiver (any number
   * of processes and hosts may run workers at once). `stop()` lets the running entries end.
   * @example const worker = receiver.startWorker({ concurrency: 8 }); process.on('SIGTERM', () => worker.stop());
   */
  startWorker(options?: WorkerOptions): InboxWorker;
  /**
   * Inbox mode: runs the entries due now (up to `limit`) once and resolves when they ended: for
   * cron jobs and serverless functions. Returns how many ran.
   */
  runDue(options?: { limit?: number }): Promise<number>;
  /**
   * The store's health for a readiness probe: reachable and its latency, its clock against the
   * host's, and the store's own checks (Redis `maxmemory-policy`, the SQL stores' tables). Answers
   * within `timeout` (the receiver's storeTimeout by default), never throws.
   * @example app.get('/ready', async (_req, res) => { const h = await receiver.health(); res.status(h.ok ? 200 : 503).json(h); });
   */
  health(options?: HealthCheckOptions): Promise<HealthReport>;
}

/** Options of `receiver.health()`. */
export interface HealthCheckOptions {
  /** The longest wait for the store. @default the receiver's storeTimeout */
  timeout?: Duration;
  /** The largest clock difference between store and host still healthy. @default '2s' */
  maxClockSkew?: Duration;
}
