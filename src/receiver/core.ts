/**
 * A receiver's core: its options checked and resolved once, and what every stage shares (the
 * provider and store, the key space, the timings and policies, the handlers, the inbox, and
 * `report`, through which every result goes to the logger, `onOutcome` and telemetry). Built by
 * `createCore`; the stages and drivers take it as their first argument.
 */
import { parsePositiveDuration } from '../core/duration.js';
import type { InboxStore } from '../core/inbox.js';
import { checkSpace } from '../core/keys.js';
import { causeOf, emit, type Logger, logThrottle, resolveLogger } from '../core/logger.js';
import {
  resolveTelemetry,
  storeKind,
  type Telemetry,
  type TelemetryRun,
  type TelemetryRunInfo,
} from '../core/telemetry.js';
import { resolveTimings } from '../core/timings.js';
import type { Store } from '../core/types.js';
import { ConfigError, StoreMisconfiguredError, StoreUnavailableError } from '../errors.js';
import type { HandshakeAnswer, HandshakeRequest, Provider } from '../providers/types.js';
import { Clashes } from './accepted-by.js';
import { batchedComplete } from './complete-batch.js';
import { watchResponse } from './http.js';
import { type InboxPolicy, inboxPolicy } from './inbox.js';
import { logEntryFor } from './log-entry.js';
import { type Done, doneFor, type Known, known, rejection } from './outcome.js';
import type { DeliveryResult } from './result.js';
import { takeSpace } from './spaces.js';
import type { Handler, ReceiverOptions } from './types.js';

const DEFAULT_MAX_BODY = 1024 * 1024;

/** The receiver's durations, in ms. */
export type Timings = ReturnType<typeof resolveTimings>;

export interface ReceiverCore {
  readonly provider: Provider<any, any>;
  readonly store: Store;
  /** The key space: every key this receiver writes starts with `space:`. */
  readonly space: string;
  readonly maxBodyBytes: number;
  readonly bodyTimeoutMs: number;
  readonly timings: Timings;
  /** How long a completed key is kept: the receiver's option, else the provider's retry window. */
  readonly retentionMs: number;
  /** Retry-After (s) of a 503 for an unavailable store. */
  readonly retryAfterS: number;
  readonly onInFlight: 'retry' | 'acknowledge';
  readonly onUnkeyed: 'process' | 'reject';
  readonly telemetry: Telemetry | undefined;
  /** What every telemetry run of this receiver is; undefined without telemetry. */
  readonly runInfo: TelemetryRunInfo | undefined;
  /** Inbox mode's policy and the store's inbox; both undefined in inline mode. */
  readonly policy: InboxPolicy | undefined;
  readonly inbox: InboxStore | undefined;
  /** The inbox's `complete` for this receiver's runs, batched where the store can (complete-batch.ts). */
  readonly complete: InboxStore['complete'] | undefined;
  /** The provider's handshake, bound; undefined when it has none. */
  readonly handshake:
    | ((request: HandshakeRequest) => HandshakeAnswer | undefined | Promise<HandshakeAnswer | undefined>)
    | undefined;
  /** Local workers of this receiver, woken when a delivery is accepted here. */
  readonly wakers: Set<() => void>;
  /** Other apps' entries met under this receiver's name (the `inbox-receivers` health check). */
  readonly clashes: Clashes;
  /** The handler for a type: its own in `on`, else `handler`. */
  pickHandler(type: string | undefined): Handler<unknown> | undefined;
  /** The handler's own Response, watched (see http.ts `watchResponse`); undefined for any other value. */
  asResponse(value: unknown): Response | undefined;
  /** Hands a result to the logger, `onOutcome` and telemetry, and returns it. */
  report(result: DeliveryResult): DeliveryResult;
  /** What is known of a delivery before anything is read of it. */
  known(key?: string, id?: string, type?: string): Known;
  /** The claim options of one event (`timeoutMs`: a shorter deadline of its own, see `ReceiveInput.timeout`). */
  engineOptions(fingerprint: string, run?: TelemetryRun, timeoutMs?: number): EngineOptions;
  /** Fail open (run without dedup) for this store error: only an outage, with `onStoreError: 'open'`. */
  failsOpen(error: StoreUnavailableError): boolean;
  /** The answer to the same key with another fingerprint (see {@link conflictOf}). */
  conflict(done: Done, typeOnly?: boolean): DeliveryResult;
}

export interface EngineOptions {
  leaseMs: number;
  timeoutMs: number;
  storeTimeoutMs: number;
  retentionMs: number;
  fingerprint: string;
  telemetry: TelemetryRun | undefined;
}

/** The receiver's options checked (a `ConfigError` for the first wrong one) and resolved. */
export function createCore(
  options: ReceiverOptions<Provider<any, any>>,
  site: string | undefined,
): ReceiverCore {
  const { provider, store } = checked(options);
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes < 1) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: maxBodyBytes must be a positive integer, got ${maxBodyBytes}`,
    );
  }
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
  const onStoreError = options.onStoreError ?? 'closed';
  const onConflict = options.onConflict ?? 'reject';
  const logger = resolveLogger(options.logger);
  const telemetry = resolveTelemetry(options.telemetry);
  const handlers = (options.on ?? {}) as Record<string, Handler<unknown> | undefined>;
  const policy = inboxPolicy(options.inbox);
  const inbox = policy ? store.inbox : undefined;
  if (policy && !inbox) {
    throw new ConfigError(
      'invalid_option',
      'onceonly: inbox mode needs a store with an inbox (memoryStore, redisStore, postgresStore, mysqlStore, sqliteStore and dynamoDbStore have one)',
    );
  }
  // Last, once every option is known good: a refused receiver must not keep its space.
  takeSpace(store, space, provider, named, site);
  // A provider built with onceonly/testing's test keys: the operator's own log hears it too.
  if (provider.testKeys === true && logger) {
    emit(
      logger,
      'warn',
      `onceonly: the ${provider.name} receiver trusts onceonly/testing's test keys: for tests only, never in production`,
    );
  }
  const runInfo: TelemetryRunInfo | undefined = telemetry && {
    kind: 'delivery',
    provider: provider.name,
    receiver: space,
    store: storeKind(store),
  };
  if (telemetry && inbox) telemetry.observeInbox?.(inbox, space);
  // The handler's own Response, watched: if it cannot be sent (read already, failing, never ending),
  // the answer is the outcome's and the logger hears why (see `unsendable`). Where it is read whole
  // (the Node adapters), it gets the handler's timeout, at most 5 s.
  const responseWatch = {
    warn: (message: string) => emit(logger, 'warn', message),
    readMs: Math.min(timings.timeoutMs, 5_000),
  };
  const fallback = options.handler as Handler<unknown> | undefined;
  return {
    provider,
    store,
    space,
    maxBodyBytes,
    bodyTimeoutMs,
    timings,
    retentionMs,
    retryAfterS,
    onInFlight: options.onInFlight ?? 'retry',
    onUnkeyed: options.onUnkeyed ?? 'process',
    telemetry,
    runInfo,
    policy,
    inbox,
    complete: inbox ? batchedComplete(inbox, timings.storeTimeoutMs) : undefined,
    handshake: typeof provider.handshake === 'function' ? provider.handshake.bind(provider) : undefined,
    wakers: new Set(),
    clashes: new Clashes(),
    pickHandler(type) {
      const byType =
        type === undefined ? undefined : Object.hasOwn(handlers, type) ? handlers[type] : undefined;
      return byType ?? fallback;
    },
    asResponse: (value) => (value instanceof Response ? watchResponse(value, responseWatch) : undefined),
    report: reporter(options, logger, telemetry, space),
    known: (key, id, type) => known(provider.name, space, key, id, type),
    engineOptions: (fingerprint, run, timeoutMs) => ({
      leaseMs: timings.leaseMs,
      timeoutMs: timeoutMs === undefined ? timings.timeoutMs : Math.min(timeoutMs, timings.timeoutMs),
      storeTimeoutMs: timings.storeTimeoutMs,
      retentionMs,
      fingerprint,
      telemetry: run,
    }),
    // A misconfigured store (bad credentials, a missing table) is not going to pass, and running
    // every delivery unguarded until someone notices would double them all.
    failsOpen: (error) => onStoreError === 'open' && !(error instanceof StoreMisconfiguredError),
    conflict: (done, typeOnly = false) => conflictOf(done, typeOnly, onConflict),
  };
}

/** The options a receiver cannot be made without: a provider, a store, a handler. */
function checked(options: ReceiverOptions<Provider<any, any>>): {
  provider: Provider<any, any>;
  store: Store;
} {
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
  return { provider, store };
}

/**
 * Where every result goes: the logger (the cases someone must hear about are never silent,
 * whatever onOutcome does), `onOutcome`, telemetry. Neither an observer's bug nor telemetry's may
 * change what the provider is told.
 */
function reporter(
  options: ReceiverOptions<Provider<any, any>>,
  logger: Logger | undefined,
  telemetry: Telemetry | undefined,
  space: string,
): (result: DeliveryResult) => DeliveryResult {
  const unauthenticated = logThrottle(60_000);
  const { onOutcome } = options;
  return (result) => {
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
    if (onOutcome) {
      try {
        const pending = onOutcome(result) as PromiseLike<unknown> | undefined;
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
  };
}

/** A store failure as the store error it is, or wrapped in one. */
export function storeError(cause: unknown): StoreUnavailableError {
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
function conflictOf(done: Done, typeOnly: boolean, onConflict: 'reject' | 'acknowledge'): DeliveryResult {
  if (typeOnly) return done('conflict', 200, { code: 'type_mismatch' });
  return done('conflict', onConflict === 'reject' ? 422 : 200, { code: 'fingerprint_mismatch' });
}

/** A delivery refused before anything is known of it (see `rejection`), reported. */
export function rejectionResult(core: ReceiverCore, error: unknown, started: number): DeliveryResult {
  return rejection(error, doneFor(core.known(), started, core.report));
}
