import { newToken, sha256Hex } from '../core/crypto.js';
import { type Duration, parsePositiveDuration } from '../core/duration.js';
import { type DegradedReason, runClaimed, signalFrom, type WorkContext } from '../core/engine.js';
import { checkHealth, type HealthReport } from '../core/health.js';
import type { InboxJob } from '../core/inbox.js';
import { checkSpace, digestKey, idKey } from '../core/keys.js';
import { causeOf, emit, type Logger, logThrottle, resolveLogger } from '../core/logger.js';
import {
  resolveTelemetry,
  storeKind,
  type Telemetry,
  type TelemetryRun,
  type TelemetryRunInfo,
  TRACE_HEADER,
  timedPhase,
} from '../core/telemetry.js';
import { later, leaseNow, timeoutSignal, withDeadline } from '../core/timers.js';
import { resolveTimings } from '../core/timings.js';
import { backendOf, type Lease, type Store } from '../core/types.js';
import {
  BodyAlreadyParsedError,
  BodyTimeoutError,
  BodyTooLargeError,
  ConfigError,
  HandlerTimeoutError,
  OnceonlyError,
  StoreMisconfiguredError,
  StoreUnavailableError,
  VerificationError,
} from '../errors.js';
import type {
  BatchItem,
  EventMapOf,
  EventOf,
  HandshakeAnswer,
  HeaderReader,
  Provider,
  Verified,
} from '../providers/types.js';
import { Clashes, stamped, unstamped } from './accepted-by.js';
import {
  asWebHeaders,
  type BodySource,
  type HeadersInput,
  headerPairs,
  type RawBody,
  readBody,
  readBounded,
  toBytes,
  toHeaderReader,
} from './body.js';
import { answerOf, type Outcome, toResponse, watchResponse } from './http.js';
import {
  type InboxOptions,
  type InboxRunEnd,
  type InboxWorker,
  inboxPolicy,
  runEntry,
  startWorkerLoop,
  takeDue,
  type WorkerOptions,
} from './inbox.js';

export type { Logger } from '../core/logger.js';

import type { DeliveryResult } from './result.js';

export type { DeliveryResult, Outcome } from './result.js';

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

const DEFAULT_MAX_BODY = 1024 * 1024;

/**
 * One line for the outcomes that must never pass unseen (lease lost, conflict, degraded, a body
 * another parser consumed), or undefined. Names the key and attempt, never a secret or body.
 * The receiver's `logger` gets these lines (at `warn`) and also those of {@link logEntryFor}.
 */
export function warningFor(result: DeliveryResult): string | undefined {
  const entry = logEntryFor(result);
  return entry?.level === 'warn' || result.code === 'body_already_parsed' ? entry?.message : undefined;
}

/**
 * The log line for a result and its level, or undefined for outcomes that need none (processed,
 * duplicate, in-flight, ignored, plain rejections of bad input). Names the receiver, key and
 * attempt and the cause, never a body, signature or secret.
 */
export function logEntryFor(
  result: DeliveryResult,
): { level: 'warn' | 'error'; message: string; detail?: unknown } | undefined {
  // The common outcomes need no line: answered before any string is built.
  const o = result.outcome;
  if (
    !result.degraded &&
    (o === 'processed' ||
      o === 'duplicate' ||
      o === 'in-flight' ||
      o === 'ignored' ||
      o === 'unkeyed' ||
      o === 'handshake' ||
      (o === 'accepted' && result.error === undefined) ||
      ((o === 'rejected' || o === 'too-large') && result.status < 500))
  )
    return undefined;
  const at = `${result.key ?? result.receiver ?? result.provider}${result.attempt ? ` (attempt ${result.attempt})` : ''}`;
  const degraded = result.degraded
    ? `; degraded (${result.degraded}${result.cause !== undefined ? `: ${causeOf(result.cause)}` : ''}): the event may run again, check the store`
    : '';
  switch (result.outcome) {
    case 'failed':
      return {
        level: 'error',
        message: `onceonly: failed for ${at}: ${result.code ?? 'handler_failed'}: ${causeOf(result.error)}; ${
          result.inbox?.state === 'pending'
            ? `the inbox retries it${result.inbox.nextAttemptAt ? ` at ${result.inbox.nextAttemptAt.toISOString()}` : ''}`
            : `answered ${result.status} so the provider retries`
        }${degraded}`,
        detail: result.error,
      };
    case 'store-unavailable':
      return {
        level: 'error',
        message:
          result.error instanceof StoreMisconfiguredError
            ? `onceonly: store misconfigured for ${at}: ${causeOf(result.error)}; answered 503 until it is fixed`
            : `onceonly: store unavailable for ${at}: ${causeOf(result.error)}; answered ${result.status}${result.status === 503 ? ' so the provider retries later' : ''}`,
      };
    case 'lease-lost':
      return {
        level: 'warn',
        message: `onceonly: lease-lost for ${at}: the handler finished after its lease ran out and another delivery took over; fence your writes with attempt, or raise lease`,
      };
    case 'dead':
      return {
        level: 'error',
        message: `onceonly: dead in the inbox: ${at}: ${result.code ?? 'handler_failed'}: ${causeOf(result.error)}; kept, not retried: fix the cause, then requeue it (onceonly inbox retry)${degraded}`,
        detail: result.error,
      };
    case 'accepted':
      if (result.error === undefined) break;
      return {
        level: 'error',
        message: `onceonly: inline run failed for ${at}: ${result.code ?? 'handler_failed'}: ${causeOf(result.error)}; the inbox has it${
          result.inbox?.state === 'pending' && result.inbox.nextAttemptAt
            ? `, next attempt at ${result.inbox.nextAttemptAt.toISOString()}`
            : result.inbox?.state === 'dead'
              ? ', dead (maxAttempts reached)'
              : ''
        }${degraded}`,
        detail: result.error,
      };
    case 'conflict':
      return {
        level: 'warn',
        message:
          result.code === 'type_mismatch'
            ? `onceonly: conflict for ${at}: this signed body was already seen under another type, and now arrived as ${JSON.stringify(result.type ?? null)} (the type header is not signed): acknowledged, handler not run. A replay under another type, or the sender sending one body under two topics`
            : result.code === 'receiver_clash'
              ? `onceonly: conflict for ${at}: an inbox entry accepted by another app under the receiver name ${result.receiver ?? ''}, with secrets this one lacks: left for that app's workers, neither run nor buried here. Two apps share one store and one receiver name: give each its own name`
              : `onceonly: conflict for ${at}: the key was already seen with another fingerprint: the same event id with another body (a forgery, a re-encoded replay or a corrupted retry), or, where the provider does not sign the type, a body already seen under another type`,
      };
    default:
      break;
  }
  if (result.degraded) {
    const cause =
      result.degraded === 'store-unavailable' && result.error !== undefined
        ? `: ${causeOf(result.error)}`
        : '';
    return {
      level: 'warn',
      message: `onceonly: ${result.outcome} for ${at} is degraded (${result.degraded}${result.cause !== undefined ? `: ${causeOf(result.cause)}` : cause}): the event may run again; check the store`,
    };
  }
  if (result.outcome === 'rejected' && result.status >= 500 && result.error instanceof Error)
    return { level: 'error', message: `onceonly: ${result.error.message.replace(/^onceonly: /, '')}` };
  return undefined;
}

/**
 * Key spaces in use per backend, in this process: two store objects over one client (one Redis
 * prefix, one SQL table) are one backend. A second receiver of the same space is refused unless it
 * is the same endpoint: over the very same provider object (an adapter given the options another
 * receiver was made from), or created again at the same place with the same secret (a module
 * reloaded, a per-request factory); or both receivers named the space explicitly to share it.
 */
const SPACES = Symbol.for('onceonly.keySpaces');
/** One registry per process, shared by the ESM and the CommonJS copies of the package. */
type SpaceRegistry = WeakMap<
  object,
  Map<
    string,
    {
      provider: string;
      identity: string | undefined;
      named: boolean;
      site: string | undefined;
      /** The provider object itself: a second receiver over the very same object is the same endpoint. */
      instance: object;
    }
  >
>;
const global = globalThis as Record<symbol, unknown>;
if (!(global[SPACES] instanceof WeakMap)) global[SPACES] = new WeakMap();
const spaces = global[SPACES] as SpaceRegistry;

/** Where a createReceiver call comes from (file:line:column of its caller), when the stack says. */
function callSite(): string | undefined {
  const lines = new Error().stack?.split('\n') ?? [];
  // [0] Error, [1] callSite, [2] createReceiver, [3] its caller.
  return lines[3]?.trim();
}

function takeSpace(
  store: Store,
  space: string,
  provider: Provider<any, any>,
  named: boolean,
  site: string | undefined,
): void {
  const backend = backendOf(store);
  let taken = spaces.get(backend.object);
  if (!taken) {
    taken = new Map();
    spaces.set(backend.object, taken);
  }
  const slot = `${backend.scope}\n${space}`;
  const held = taken.get(slot);
  if (held) {
    const sameEndpoint =
      held.instance === provider ||
      (held.provider === provider.name &&
        held.identity === provider.identity &&
        held.site !== undefined &&
        held.site === site);
    if (sameEndpoint || (held.named && named)) return;
    throw new ConfigError(
      'key_space_taken',
      `onceonly: another receiver on this store already keys its events under '${space}'${
        held.provider === provider.name ? ` (another ${provider.name} endpoint)` : ''
      }, so one of them would swallow the other's events as duplicates. Give each receiver its own name: createReceiver({ name: '${space}-billing', ... }); to share the space on purpose (one event delivered through two subscriptions), set the same name on both explicitly`,
    );
  }
  taken.set(slot, { provider: provider.name, identity: provider.identity, named, site, instance: provider });
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
  const site = callSite();
  const named = options.name !== undefined;
  const space = named
    ? checkSpace(options.name, 'createReceiver name')
    : checkSpace(provider.name, `the provider's name (set createReceiver's name)`);
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
  const logger = resolveLogger(options.logger);
  const telemetry = resolveTelemetry(options.telemetry);
  const handlers = (options.on ?? {}) as Record<string, Handler<unknown> | undefined>;
  const policy = inboxPolicy(options.inbox);
  const inbox = policy ? store.inbox : undefined;
  if (policy && !inbox) {
    throw new ConfigError(
      'invalid_option',
      'onceonly: inbox mode needs a store with an inbox (every built-in store has one: memoryStore, redisStore, postgresStore, mysqlStore, sqliteStore)',
    );
  }
  // Local workers of this receiver, woken when a delivery is accepted here.
  const wakers = new Set<() => void>();
  // Last, once every option is known good: a refused receiver must not keep its space.
  takeSpace(store, space, provider, named, site);
  // Telemetry: what every run of this receiver is, made once.
  const runInfo: TelemetryRunInfo | undefined = telemetry && {
    kind: 'delivery',
    provider: provider.name,
    receiver: space,
    store: storeKind(store),
  };
  if (telemetry && inbox) telemetry.observeInbox?.(inbox, space);
  const handshake = typeof provider.handshake === 'function' ? provider.handshake.bind(provider) : undefined;

  // The handler's own Response, watched: if it cannot be sent (read already, failing, never ending),
  // the answer is the outcome's and the logger hears why (see `unsendable`). Where it is read whole
  // (the Node adapters), it gets the handler's timeout, at most 5 s.
  const responseWatch = {
    warn: (message: string) => emit(logger, 'warn', message),
    readMs: Math.min(timings.timeoutMs, 5_000),
  };
  function asResponse(value: unknown): Response | undefined {
    return value instanceof Response ? watchResponse(value, responseWatch) : undefined;
  }

  const unauthenticated = logThrottle(60_000);
  const clashes = new Clashes();

  function pickHandler(type: string | undefined): Handler<unknown> | undefined {
    const byType =
      type === undefined ? undefined : Object.hasOwn(handlers, type) ? handlers[type] : undefined;
    return byType ?? (options.handler as Handler<unknown> | undefined);
  }

  function report(result: DeliveryResult): DeliveryResult {
    // The cases someone must hear about are never silent, whatever onOutcome does.
    if (logger) {
      const entry = logEntryFor(result);
      if (entry && (result.outcome === 'rejected' || result.code === 'receiver_clash')) {
        // Refused before any credential was checked (a key that could not be fetched): anyone can
        // cause these, so a flood costs one line and a count a minute, never a line a request.
        const code = result.code ?? 'rejected';
        unauthenticated(
          code,
          () => emit(logger, entry.level, entry.message, entry.detail),
          (held, seconds) =>
            emit(
              logger,
              entry.level,
              `onceonly: ${held} more deliveries to ${space} refused ${result.status} ${code} in ${seconds} s, as logged above (requests not yet authenticated: one line a minute)`,
            ),
        );
      } else if (entry) emit(logger, entry.level, entry.message, entry.detail);
    }
    if (options.onOutcome) {
      try {
        const pending = options.onOutcome(result) as PromiseLike<unknown> | undefined;
        if (pending && typeof pending.then === 'function') pending.then(undefined, () => {});
      } catch {
        // An observer's bug must not change what the provider is told.
      }
    }
    if (telemetry) {
      try {
        telemetry.outcome(result, 'receiver');
      } catch {
        // Same for telemetry.
      }
    }
    return result;
  }

  /**
   * A result from what is known of the delivery (`base`) and what the outcome adds (`extra`, whose
   * own fields win, `undefined` included), built as one object literal of one shape: no spreads on
   * the path every delivery takes.
   */
  function resultOf(
    base: ReturnType<typeof baseResult>,
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

  function baseResult() {
    return {
      provider: provider.name,
      receiver: space,
      key: undefined as string | undefined,
      id: undefined as string | undefined,
      type: undefined as string | undefined,
      attempt: undefined as number | undefined,
      degraded: undefined as DegradedReason | undefined,
      code: undefined as string | undefined,
      error: undefined as unknown,
      cause: undefined as unknown,
      response: undefined as Response | undefined,
      retryAfter: undefined as number | undefined,
    };
  }

  // Not async, nor is receive(): each async frame on the path of every delivery costs a generator
  // and its promise.
  function pipeline(
    bytes: Uint8Array,
    headers: HeaderReader,
    url: string | undefined,
    receivedAt: Date,
    started: number,
    method = 'POST',
  ): Promise<DeliveryResult> {
    const base = baseResult();
    const done = (outcome: Outcome, status: number, extra: Partial<typeof base> = {}): DeliveryResult =>
      report(resultOf(base, extra, outcome, status, started));
    if (runInfo) return traced(bytes, headers, url, receivedAt, started, base, done, method, runInfo);
    // No input may make receive() or fetch() reject: whatever slipped through is a typed outcome
    // (deliver is async: a throw inside it is a rejection).
    return deliver(bytes, headers, url, receivedAt, started, base, done, method).then(undefined, (error) =>
      done('failed', 500, { code: 'internal_error', error }),
    );
  }

  /** The pipeline with telemetry: the delivery runs inside its telemetry run's context. */
  async function traced(
    bytes: Uint8Array,
    headers: HeaderReader,
    url: string | undefined,
    receivedAt: Date,
    started: number,
    base: ReturnType<typeof baseResult>,
    done: Done,
    method: string,
    info: TelemetryRunInfo,
  ): Promise<DeliveryResult> {
    const run = telemetry!.start(info);
    let result: DeliveryResult;
    try {
      result = await run.wrap(() =>
        deliver(bytes, headers, url, receivedAt, started, base, done, method, run),
      );
    } catch (error) {
      result = done('failed', 500, { code: 'internal_error', error });
    }
    run.end(result);
    return result;
  }

  async function deliver(
    bytes: Uint8Array,
    headers: HeaderReader,
    url: string | undefined,
    receivedAt: Date,
    started: number,
    base: ReturnType<typeof baseResult>,
    done: Done,
    method: string,
    run?: TelemetryRun,
  ): Promise<DeliveryResult> {
    // 0. A verification handshake, answered by the provider before the method check and before
    // verification, never touching the store or the handler.
    if (bytes.byteLength > maxBodyBytes) return rejection(new BodyTooLargeError(maxBodyBytes), done);
    if (handshake) {
      let answer: HandshakeAnswer | undefined;
      try {
        const pending = handshake({ method, rawBody: bytes, headers, url, receivedAt });
        answer = isPromise(pending) ? await pending : pending;
      } catch (error) {
        return rejection(error, done);
      }
      if (answer) return done('handshake', answer.status ?? 200, { response: handshakeResponse(answer) });
    }
    if (method !== 'POST') return rejection(methodNotAllowed(), done);

    // 1. Verify. Nothing touches the store before this succeeds.
    let verified: Verified<unknown>;
    const verifying = run?.phase('verify');
    try {
      const pending = provider.verify({ rawBody: bytes, headers, url, receivedAt });
      verified = isPromise(pending) ? await pending : pending;
    } catch (error) {
      verifying?.end(error);
      return rejection(error, done);
    }
    verifying?.end();
    const delivery = new Delivery(bytes, receivedAt, headers);
    if (verified.batch)
      return runBatch(verified.batch, delivery, started, { bytes, headers, url, receivedAt, run });

    base.id = verified.id;
    base.type = verified.type;
    const handler = pickHandler(verified.type);
    // A type the signature does not cover (GitHub's X-GitHub-Event) is bound into the fingerprint:
    // the same signed body under another type is then a conflict, never a second run.
    const unsignedType =
      verified.typeSigned === false || (verified.typeSigned !== true && verified.type !== undefined);

    // 2. Key and fingerprint.
    // The raw body's digest, only when something below needs it (a provider's own fingerprint and
    // an id key need none).
    let bodyDigest: string | undefined;
    const digest = () => (bodyDigest ??= sha256Hex(bytes));
    let key: string | undefined;
    const id = verified.key ?? verified.id;
    if (verified.dedup === 'id' && id) key = idKey(space, id);
    else if (verified.dedup === 'body') key = digestKey(space, verified.signedDigest ?? digest());
    base.key = key;
    // Ignored, with a signed type: nothing is stored, so no fingerprint is needed.
    if (!handler && !unsignedType) return done('ignored', 200);
    // A provider whose retries rewrite a per-attempt field gives a content fingerprint without it.
    let fingerprint = verified.fingerprint ?? digest();
    if (unsignedType) fingerprint = sha256Hex(`${fingerprint}\n${verified.type ?? ''}`);
    // Keyed on the raw body's digest with the type bound into the fingerprint: a mismatch of
    // fingerprints can only be the same body under another type.
    const typeOnly =
      unsignedType &&
      verified.dedup === 'body' &&
      verified.signedDigest === undefined &&
      verified.fingerprint === undefined;
    if (!handler) {
      // Ignored, with an unsigned type: the body is remembered under its type, so a captured copy
      // resent under a type we do handle is refused.
      if (key === undefined) return done('ignored', 200);
      return remember(key, fingerprint, typeOnly, done);
    }
    const event = {
      event: verified.event,
      type: verified.type,
      id: verified.id,
      key,
      fingerprint,
      typeOnly,
      run,
    };
    if (key === undefined && onUnkeyed === 'reject') {
      return done('rejected', 422, {
        code: 'unkeyed',
        error: new VerificationError(
          'unkeyed',
          'onceonly: the delivery has no usable event id and onUnkeyed is reject',
        ),
      });
    }
    // 3. Inbox mode: write it durably and answer (hybrid: run it first within the budget).
    if (policy) return acceptEntry(handler, event, { bytes, headers, url, receivedAt, run }, delivery, done);
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
    /** A conflict of this event can only be its body seen under another (unsigned) type. */
    readonly typeOnly?: boolean | undefined;
    /** The telemetry run it belongs to, when telemetry is on. */
    readonly run?: TelemetryRun | undefined;
  }
  type Done = (outcome: Outcome, status: number, extra?: Partial<DeliveryResult>) => DeliveryResult;
  /** The delivery as it arrived: what the inbox keeps. */
  interface Source {
    readonly bytes: Uint8Array;
    readonly headers: HeaderReader;
    readonly url: string | undefined;
    readonly receivedAt: Date;
    readonly run?: TelemetryRun | undefined;
  }

  function engineOptions(fingerprint: string, run?: TelemetryRun) {
    return {
      leaseMs: timings.leaseMs,
      timeoutMs: timings.timeoutMs,
      storeTimeoutMs: timings.storeTimeoutMs,
      retentionMs,
      fingerprint,
      telemetry: run,
    };
  }

  function storeError(cause: unknown): StoreUnavailableError {
    return cause instanceof StoreUnavailableError
      ? cause
      : new StoreUnavailableError(`onceonly: the store's claim failed: ${causeOf(cause)}`, { cause });
  }

  /**
   * The same key with another fingerprint. Where that can only be a body already seen under another
   * type (GitHub, Shopify: the type header is unsigned), the answer is 200 `type_mismatch`: the
   * handler does not run (a replay under another type), and the sender is not made to retry a
   * delivery it may really have sent twice under two topics (Shopify can send one body as
   * orders/create and orders/updated), which would only end with the subscription removed.
   */
  function conflict(done: Done, typeOnly = false): DeliveryResult {
    if (typeOnly) return done('conflict', 200, { code: 'type_mismatch' });
    return done('conflict', onConflict === 'reject' ? 422 : 200, { code: 'fingerprint_mismatch' });
  }

  /**
   * Fail open (run without dedup) only for an outage: a misconfigured store (bad credentials, a
   * missing table) is not going to pass, and running every delivery unguarded until someone notices
   * would double them all.
   */
  function failsOpen(error: StoreUnavailableError): boolean {
    return onStoreError === 'open' && !(error instanceof StoreMisconfiguredError);
  }

  /** An ignored delivery of an unsigned type: claimed and confirmed at once, nothing run. */
  async function remember(
    key: string,
    fingerprint: string,
    typeOnly: boolean,
    done: Done,
  ): Promise<DeliveryResult> {
    let result: Awaited<ReturnType<typeof runClaimed<undefined>>>;
    try {
      result = await runClaimed(store, key, () => undefined, engineOptions(fingerprint));
    } catch (cause) {
      const error = storeError(cause);
      if (failsOpen(error)) return done('ignored', 200, { degraded: 'store-unavailable', error });
      return done('store-unavailable', 503, { code: error.code, error, retryAfter: retryAfterS });
    }
    if (result.outcome === 'conflict') return conflict(done, typeOnly);
    if (result.outcome === 'duplicate') return done('duplicate', 200);
    if (result.outcome === 'processed' || result.outcome === 'failed')
      return done('ignored', 200, { degraded: result.degraded, cause: result.cause });
    return done('ignored', 200);
  }

  /** Claims the event's key, runs the handler under its deadline, confirms or releases: one outcome. */
  async function settle(
    handler: Handler<unknown>,
    e: Keyed,
    delivery: HandlerContext<unknown>['delivery'],
    done: Done,
  ): Promise<DeliveryResult> {
    if (e.key === undefined) return runUnguarded(handler, e, delivery, done, 'unkeyed', undefined);

    let result: Awaited<ReturnType<typeof runClaimed<unknown>>>;
    try {
      result = await runClaimed(
        store,
        e.key,
        (work) => handler(contextOf(e, delivery, work)),
        engineOptions(e.fingerprint, e.run),
      );
    } catch (cause) {
      const error = storeError(cause);
      if (failsOpen(error))
        return runUnguarded(handler, e, delivery, done, undefined, 'store-unavailable', error);
      return done('store-unavailable', 503, { code: error.code, error, retryAfter: retryAfterS });
    }

    switch (result.outcome) {
      case 'processed':
        return done('processed', 200, {
          attempt: result.attempt,
          degraded: result.degraded,
          cause: result.cause,
          response: asResponse(result.value),
        });
      case 'lease-lost':
        return done('lease-lost', 200, { attempt: result.attempt, response: asResponse(result.value) });
      case 'failed':
        return done('failed', 500, {
          attempt: result.attempt,
          degraded: result.degraded,
          cause: result.cause,
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
        return conflict(done, e.typeOnly);
    }
  }

  /** Runs the handler without a lease: unkeyed deliveries, and fail-open when the store is down. */
  async function runUnguarded(
    handler: Handler<unknown>,
    e: Keyed,
    delivery: HandlerContext<unknown>['delivery'],
    done: Done,
    outcome: 'unkeyed' | undefined,
    degraded: DegradedReason | undefined,
    storeError?: unknown,
  ): Promise<DeliveryResult> {
    let reject: (reason: unknown) => void = () => {};
    const timedOut = new Promise<never>((_, r) => {
      reject = r;
    });
    const deadline = timeoutSignal(timings.timeoutMs, () => {
      const error = new HandlerTimeoutError(timings.timeoutMs);
      reject(error);
      return error;
    });
    const timed = e.run?.phase('handler');
    try {
      const value = await Promise.race([
        Promise.resolve().then(() =>
          handler(contextOf(e, delivery, { attempt: 1, signal: deadline.signal, lease: undefined as never })),
        ),
        timedOut,
      ]);
      timed?.end();
      return done(outcome ?? 'processed', 200, { degraded, response: asResponse(value), error: storeError });
    } catch (error) {
      timed?.end(error);
      return done('failed', 500, { degraded, code: failureCode(error), error, cause: storeError });
    } finally {
      deadline.dispose();
    }
  }

  function contextOf(
    e: Keyed,
    delivery: HandlerContext<unknown>['delivery'],
    work: WorkContext,
  ): HandlerContext<unknown> {
    return new Context(e.event, e.type, e.id, e.key, work, delivery);
  }

  function runEntryOf(
    handler: Handler<unknown>,
    e: Keyed,
    delivery: HandlerContext<unknown>['delivery'],
    lease: Lease,
    sentAt: number,
    acceptedAt: Date,
  ) {
    return runEntry(inbox!, lease, sentAt, acceptedAt, (work) => handler(contextOf(e, delivery, work)), {
      policy: policy!,
      retentionMs,
      leaseMs: timings.leaseMs,
      timeoutMs: timings.timeoutMs,
      storeTimeoutMs: timings.storeTimeoutMs,
      telemetry: e.run,
    });
  }

  /** The result of one run of an entry (a worker's, or a hybrid run past its budget). */
  function runResult(run: Awaited<ReturnType<typeof runEntryOf>>, done: Done): DeliveryResult {
    const { result, end } = run;
    const state = (end: InboxRunEnd | undefined): DeliveryResult['inbox'] =>
      end === undefined || end.state === 'lost'
        ? undefined
        : {
            state: end.state,
            attempts: 'attempt' in result ? result.attempt : undefined,
            nextAttemptAt: end.state === 'pending' ? end.nextAttemptAt : undefined,
          };
    switch (result.outcome) {
      case 'processed':
        return done('processed', 200, {
          attempt: result.attempt,
          degraded: result.degraded,
          cause: result.cause,
          response: asResponse(result.value),
          inbox: state(end) ?? { state: 'processing', attempts: result.attempt },
        });
      case 'lease-lost':
        return done('lease-lost', 200, { attempt: result.attempt, response: asResponse(result.value) });
      case 'failed':
        return done(end?.state === 'dead' ? 'dead' : 'failed', 500, {
          attempt: result.attempt,
          degraded: result.degraded,
          cause: result.cause,
          code: failureCode(result.error),
          error: result.error,
          inbox: state(end),
        });
      default:
        // runLeased only ends in processed, lease-lost or failed.
        return done('failed', 500, { code: 'internal_error' });
    }
  }

  /**
   * Inbox mode: the delivery is written durably under its key in one atomic step and answered.
   * Hybrid: written already leased to this request, which runs the handler at once; done within the
   * inline budget answers as inline mode does, else the entry is the inbox's (the still-running
   * handler keeps its lease, and its end is reported when it comes).
   */
  async function acceptEntry(
    handler: Handler<unknown>,
    e: Keyed,
    source: Source,
    delivery: HandlerContext<unknown>['delivery'],
    done: Done,
    item?: string,
  ): Promise<DeliveryResult> {
    const box = inbox!;
    const p = policy!;
    const started = Date.now();
    // A delivery without a usable id is still kept durably, under a key of its own (never a duplicate).
    const key = e.key ?? `${space}:~unkeyed:${newToken()}`;
    const sentAt = leaseNow();
    let accepted: Awaited<ReturnType<typeof box.accept>>;
    const claimMs = p.inlineMs === undefined ? undefined : timings.leaseMs;
    // The headers kept with the entry, read before the store is asked: a name or value no HTTP
    // header can have (a plain-object header map passed to receive()) is a 400, not a store error.
    let kept: readonly (readonly [string, string])[];
    try {
      kept = stamped(
        e.run ? withCarrier(headerPairs(source.headers), e.run) : headerPairs(source.headers),
        provider.identity,
      );
    } catch (error) {
      return rejectionResult(error, started);
    }
    const writing = Promise.resolve().then(() =>
      timedPhase(e.run, 'accept', () =>
        box.accept(
          {
            key,
            fingerprint: e.fingerprint,
            receiver: space,
            type: e.type,
            id: e.id,
            item,
            body: source.bytes,
            headers: kept,
            url: source.url,
            receivedAt: source.receivedAt,
          },
          claimMs === undefined ? {} : { claimMs },
        ),
      ),
    );
    try {
      accepted = await withDeadline('accept', timings.storeTimeoutMs, () => writing);
    } catch (cause) {
      // An accept that lands after its deadline is durable all the same; a hybrid one leased to
      // this request is handed to the workers at once instead of waiting for its lease to run out.
      writing
        .then(
          (late) =>
            late.status === 'accepted' && late.lease
              ? box.retry(late.lease, { delayMs: 0, error: 'accepted after storeTimeout' })
              : undefined,
          () => undefined,
        )
        .catch(() => undefined);
      const error = storeError(cause);
      if (failsOpen(error))
        return runUnguarded(handler, e, delivery, done, undefined, 'store-unavailable', error);
      return done('store-unavailable', 503, { code: error.code, error, retryAfter: retryAfterS });
    }
    if (accepted.status === 'conflict') return conflict(done, e.typeOnly);
    if (accepted.status === 'duplicate') {
      // The sender redelivering an entry that died (GitHub's "Redeliver" button) is a retry by hand.
      if (accepted.state === 'dead') {
        const requeued = await withDeadline('requeue', timings.storeTimeoutMs, () =>
          box.requeue({ key }),
        ).catch(() => 0);
        if (requeued > 0) {
          for (const wake of wakers) wake();
          return done('accepted', p.acceptedStatus, { key, inbox: { state: 'pending' } });
        }
      }
      return done('duplicate', 200, { key, inbox: { state: accepted.state } });
    }
    if (!accepted.lease) {
      for (const wake of wakers) wake();
      return done('accepted', p.acceptedStatus, { key, inbox: { state: 'pending' } });
    }
    // Hybrid: run now, answer at the budget whatever the state.
    const running = runEntryOf(handler, { ...e, key }, delivery, accepted.lease, sentAt, new Date());
    let budget: { cancel(): void } | undefined;
    const overBudget = new Promise<'over'>((resolve) => {
      budget = later(() => resolve('over'), p.inlineMs!, { unref: true });
    });
    const first = await Promise.race([running, overBudget]);
    budget?.cancel();
    if (first === 'over') {
      // Still running: the entry stays leased to this run; its end is reported when it comes.
      const detached: Done = (outcome, status, extra = {}) =>
        report({
          ...baseResult(),
          key,
          id: e.id,
          type: e.type,
          ...extra,
          outcome,
          status,
          durationMs: Date.now() - started,
        });
      running.then(
        (run) => runResult(run, detached),
        () => {},
      );
      return done('accepted', p.acceptedStatus, {
        key,
        attempt: 1,
        inbox: { state: 'processing', attempts: 1 },
      });
    }
    if (first.result.outcome === 'failed') {
      // Failed within the budget: the inbox has it now (a retry after the backoff, or dead).
      const r = first.result;
      const end = first.end;
      return done('accepted', p.acceptedStatus, {
        key,
        attempt: r.attempt,
        degraded: r.degraded,
        cause: r.cause,
        code: failureCode(r.error),
        error: r.error,
        inbox:
          end === undefined || end.state === 'lost'
            ? undefined
            : {
                state: end.state,
                attempts: r.attempt,
                nextAttemptAt: end.state === 'pending' ? end.nextAttemptAt : undefined,
              },
      });
    }
    return runResult(first, done);
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
    source: Source,
  ): Promise<DeliveryResult> {
    const results: DeliveryResult[] = [];
    for (const item of items) {
      const itemBase = { ...baseResult(), key: idKey(space, item.id), id: item.id, type: item.type };
      const done: Done = (outcome, status, extra = {}) =>
        report({ ...itemBase, ...extra, outcome, status, durationMs: Date.now() - started });
      const handler = pickHandler(item.type);
      let fingerprint: string;
      try {
        // The event's own content: one event of a batch has no bytes of its own.
        fingerprint = sha256Hex(JSON.stringify(item.event));
      } catch (error) {
        // Nested too deep to serialise (a hostile but signed body): refused like any invalid body.
        return rejection(
          new VerificationError('invalid_body', 'onceonly: an event of the batch is nested too deeply', {
            cause: error,
          }),
          (outcome, status, extra) =>
            report({ ...baseResult(), ...extra, outcome, status, durationMs: Date.now() - started }),
        );
      }
      const keyed = {
        event: item.event,
        type: item.type,
        id: item.id,
        key: itemBase.key,
        fingerprint,
        run: source.run,
      };
      const result = !handler
        ? done('ignored', 200, { key: undefined })
        : policy
          ? await acceptEntry(handler, keyed, source, delivery, done, item.id)
          : await settle(handler, keyed, delivery, done);
      results.push(result);
      if (result.outcome === 'store-unavailable') break;
    }
    return batchResult(results, Date.now() - started);
  }

  function receive(input: ReceiveInput): Promise<DeliveryResult> {
    let started: number;
    let receivedAt: Date | undefined;
    let method: string;
    try {
      started = Date.now();
      receivedAt = input.receivedAt;
      if (
        receivedAt !== undefined &&
        !(receivedAt instanceof Date && Number.isFinite(receivedAt.getTime()))
      ) {
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
    if (method !== 'POST' && !handshake) return Promise.resolve(rejectionResult(methodNotAllowed(), started));
    let bytes: Uint8Array = EMPTY;
    let headers: HeaderReader;
    let reading: Promise<Uint8Array> | undefined;
    try {
      headers = toHeaderReader(input.headers);
      const raw = input.rawBody;
      if (bodiless(method)) bytes = EMPTY;
      else if (isBodySource(raw))
        reading = readBounded(raw, maxBodyBytes, headers.get('content-length'), bodyTimeoutMs);
      else bytes = toBytes(raw);
    } catch (error) {
      return Promise.resolve(rejectionResult(error, started));
    }
    if (!reading) return pipeline(bytes, headers, input.url, receivedAt ?? new Date(), started, method);
    return reading.then(
      (read) => pipeline(read, headers, input.url, receivedAt ?? new Date(), started, method),
      (error: unknown) => rejectionResult(error, started),
    );
  }

  /**
   * One taken entry, run by a worker: re-verified from what the inbox kept (timestamp tolerance
   * measured from when it arrived), routed by type, run under its lease; then completed, retried
   * after the backoff, or buried.
   */
  async function runJob(job: InboxJob, takenAt: number, tracing?: TelemetryRun): Promise<DeliveryResult> {
    const started = Date.now();
    const done: Done = (outcome, status, extra = {}) =>
      report({
        ...baseResult(),
        key: job.key,
        id: job.id,
        type: job.type,
        ...extra,
        outcome,
        status,
        durationMs: Date.now() - started,
      });
    const box = inbox!;
    const bury = async (error: unknown, why: string) => {
      const buried = await withDeadline('bury', timings.storeTimeoutMs, () =>
        box.bury(job.lease, { error: `${why}: ${causeOf(error)}` }),
      ).catch(() => false);
      const code = error instanceof OnceonlyError ? error.code : 'inbox_unrunnable';
      // A bury that did not land (the lease was lost, or the store failed) leaves the entry where it
      // was: reported failed, as a retry that did not land is, never dead when it is not.
      if (!buried) return done('failed', 500, { attempt: job.lease.attempt, code, error });
      return done('dead', 500, {
        attempt: job.lease.attempt,
        code,
        error,
        inbox: { state: 'dead', attempts: job.lease.attempt },
      });
    };
    const leave = async (error: unknown, other: string) => {
      clashes.seen(other);
      const delayMs = policy!.backoff(1);
      const left = await withDeadline('retry', timings.storeTimeoutMs, () =>
        box.retry(job.lease, {
          delayMs,
          error: `left for the receiver that accepted it (identity ${other}), whose secrets this one lacks: ${causeOf(error)}`,
        }),
      ).catch(() => false);
      return done('conflict', 409, {
        attempt: job.lease.attempt,
        code: 'receiver_clash',
        error,
        inbox: left ? { state: 'pending', nextAttemptAt: new Date(Date.now() + delayMs) } : undefined,
      });
    };
    // Changed or damaged in the store: it can never run. Kept, dead, reported, for an operator.
    if (job.unreadable !== undefined) return bury(new Error(job.unreadable), 'unreadable');
    // Its last run ended without a verdict (its process died, or it stalled past its lease), and
    // that was its last attempt: an event that kills whatever runs it ends dead, not in a crash loop.
    if (job.takenOver && job.lease.attempt > policy!.maxAttempts) {
      return bury(
        new Error(
          `its run at attempt ${job.lease.attempt - 1} ended without a verdict (its process died, or it stalled past its lease) and its ${policy!.maxAttempts} attempts are spent`,
        ),
        'attempts spent',
      );
    }
    let verified: Verified<unknown>;
    const { identity: acceptedBy, headers: kept } = unstamped(job.headers);
    const headers = toHeaderReader(kept);
    try {
      const pending = provider.verify({
        rawBody: job.body,
        headers,
        url: job.url,
        receivedAt: job.receivedAt,
      });
      verified = isPromise(pending) ? await pending : pending;
    } catch (error) {
      // Accepted by another app under this receiver name, with other secrets: not ours to run.
      // Left, due again after a backoff, for that app's workers, and the clash reported; buried
      // only once its attempts are spent with none of them run (the other app gone, or the
      // secret rotated out), so it ends visible, never retried for ever.
      if (acceptedBy !== undefined && acceptedBy !== provider.identity) {
        if (job.lease.attempt < policy!.maxAttempts) return leave(error, acceptedBy);
        clashes.seen(acceptedBy);
        return bury(
          error,
          `accepted by another receiver (identity ${acceptedBy}) and no longer verifies here; its ${policy!.maxAttempts} attempts are spent`,
        );
      }
      // The secret it was signed with is gone (rotated out before the inbox drained), or the entry
      // was changed in the store: it can never run. Kept, dead, for an operator.
      return bury(error, 'no longer verifies');
    }
    let event = verified.event;
    let type = verified.type;
    if (job.item !== undefined) {
      const item = verified.batch?.find((i) => i.id === job.item);
      if (!item) return bury(new Error(`the batch holds no event ${job.item}`), 'unrunnable');
      event = item.event;
      type = item.type;
    }
    const handler = pickHandler(type);
    if (!handler) return bury(new Error(`no handler for type ${JSON.stringify(type ?? null)}`), 'unrunnable');
    const delivery = new Delivery(job.body, job.receivedAt, headers);
    const keyed: Keyed = {
      event,
      type,
      id: job.id,
      key: job.key,
      fingerprint: job.fingerprint,
      run: tracing,
    };
    // The lease was taken when take() was sent; a conservative start for its bound.
    const run = await runEntryOf(handler, keyed, delivery, job.lease, takenAt, job.acceptedAt);
    return runResult(run, done);
  }

  /** A worker's run of one entry, inside its own telemetry run (linked to the accepting delivery). */
  async function runJobTraced(job: InboxJob, takenAt: number): Promise<DeliveryResult> {
    const run = telemetry!.start({ ...runInfo!, kind: 'inbox', headers: unstamped(job.headers).headers });
    let result: DeliveryResult;
    try {
      result = await run.wrap(() => runJob(job, takenAt, run));
    } catch (error) {
      run.end({ outcome: 'failed', status: 500, code: 'internal_error', error });
      throw error;
    }
    run.end(result);
    return result;
  }

  function takeFailed(error: unknown): void {
    const e = storeError(error);
    report({
      ...baseResult(),
      outcome: 'store-unavailable',
      status: 503,
      code: e.code,
      error: e,
      durationMs: 0,
    });
  }

  function requireInbox(what: string) {
    if (!inbox || !policy) {
      throw new ConfigError(
        'invalid_option',
        `onceonly: ${what} needs a receiver in inbox mode (createReceiver({ inbox: true }))`,
      );
    }
    return inbox;
  }

  function rejectionResult(error: unknown, started: number): DeliveryResult {
    return rejection(error, (outcome, status, extra) =>
      report({ ...baseResult(), ...extra, outcome, status, durationMs: Date.now() - started }),
    );
  }

  return {
    maxBodyBytes,
    receive,
    startWorker(workerOptions: WorkerOptions = {}): InboxWorker {
      const box = requireInbox('startWorker()');
      return startWorkerLoop(
        {
          inbox: box,
          space,
          leaseMs: timings.leaseMs,
          storeTimeoutMs: timings.storeTimeoutMs,
          run: runInfo ? runJobTraced : runJob,
          takeFailed,
        },
        workerOptions,
        wakers,
      );
    },
    async runDue({ limit = 100 }: { limit?: number } = {}): Promise<number> {
      const box = requireInbox('runDue()');
      const takenAt = leaseNow();
      const jobs = await takeDue(
        { inbox: box, space, leaseMs: timings.leaseMs, storeTimeoutMs: timings.storeTimeoutMs },
        limit,
      );
      await Promise.all(jobs.map((job) => (runInfo ? runJobTraced(job, takenAt) : runJob(job, takenAt))));
      return jobs.length;
    },
    async health(healthOptions: HealthCheckOptions = {}): Promise<HealthReport> {
      const report = await checkHealth(store, {
        timeoutMs:
          healthOptions.timeout === undefined
            ? timings.storeTimeoutMs
            : parsePositiveDuration(healthOptions.timeout, 'health timeout'),
        maxClockSkewMs: parsePositiveDuration(healthOptions.maxClockSkew ?? '2s', 'health maxClockSkew'),
        inbox: inbox !== undefined,
      });
      const clash = clashes.check(space);
      return clash ? { ...report, ok: false, checks: [...report.checks, clash] } : report;
    },
    async fetch(request: Request): Promise<Response> {
      const started = Date.now();
      const method = methodOf(request.method);
      if (method !== 'POST' && !handshake) return toResponse(rejectionResult(methodNotAllowed(), started));
      let bytes: Uint8Array;
      try {
        bytes = bodiless(method) ? EMPTY : await readBody(request, maxBodyBytes, bodyTimeoutMs);
      } catch (error) {
        return toResponse(rejectionResult(error, started));
      }
      const result = await pipeline(bytes, request.headers, request.url, new Date(), started, method);
      return result.response ? answerOf(result) : toResponse(result);
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
  // A setup mistake found on delivery (twilio without its url): 500 so the provider retries once
  // it is fixed, logged as an error; never a rejected promise.
  if (error instanceof ConfigError) return done('rejected', 500, { code: error.code, error });
  // A provider that threw something unexpected on hostile input: still a clean 400, never a crash.
  return done('rejected', 400, { code: 'invalid_body', error });
}

const READER = Symbol('onceonly.headerReader');
const WEB_HEADERS = Symbol('onceonly.webHeaders');

/** `delivery.headers`: an own, enumerable accessor, as a literal's getter is, defined from one shared descriptor. */
const HEADERS_PROPERTY: PropertyDescriptor = {
  get(this: Delivery): Headers {
    // A web Headers only when the handler asks for one (Node's header objects stay as they are).
    this[WEB_HEADERS] ??= asWebHeaders(this[READER]);
    return this[WEB_HEADERS];
  },
  enumerable: true,
  configurable: true,
};

/**
 * The raw delivery a handler sees, and below the handler's context. Not object literals with
 * getters: V8 builds such a literal at run time, about half a microsecond each, on the path of every
 * delivery. Their getters are still own enumerable properties (a spread or `Object.keys` sees them,
 * as before), defined from shared descriptors; what they read is under symbols.
 */
class Delivery {
  [WEB_HEADERS]: Headers | undefined = undefined;
  readonly [READER]: HeaderReader;
  declare readonly headers: Headers;
  constructor(
    readonly rawBody: Uint8Array,
    readonly receivedAt: Date,
    reader: HeaderReader,
  ) {
    this[READER] = reader;
    Object.defineProperty(this, 'headers', HEADERS_PROPERTY);
  }
}

/** The handler's context; `signal` is read through to the run (see `signalFrom`). */
class Context implements HandlerContext<unknown> {
  readonly attempt: number;
  readonly lease: Lease;
  declare readonly signal: AbortSignal;
  constructor(
    readonly event: unknown,
    readonly type: string | undefined,
    readonly id: string | undefined,
    readonly key: string | undefined,
    work: WorkContext,
    readonly delivery: HandlerContext<unknown>['delivery'],
  ) {
    this.attempt = work.attempt;
    this.lease = work.lease;
    signalFrom(this, work);
  }
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

const EMPTY = new Uint8Array(0);

function methodOf(method: string | undefined): string {
  return method === undefined ? 'POST' : method.toUpperCase();
}

/** GET and HEAD carry no body: it is never read. */
function bodiless(method: string): boolean {
  return method === 'GET' || method === 'HEAD';
}

function methodNotAllowed(): VerificationError {
  return new VerificationError('method_not_allowed', 'onceonly: webhooks are delivered with POST');
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

/** The stored headers plus the accepting run's trace context, so the worker's run links back to it. */
function withCarrier(
  pairs: readonly (readonly [string, string])[],
  run: TelemetryRun,
): readonly (readonly [string, string])[] {
  const carried = run.carrier?.();
  if (!carried) return pairs;
  return [...pairs.filter(([name]) => name !== TRACE_HEADER), carried];
}

function failureCode(error: unknown): string {
  return error instanceof OnceonlyError ? error.code : 'handler_failed';
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
