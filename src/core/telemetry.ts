/**
 * The telemetry hook: what a receiver, `once()` and an inbox worker tell an observer about each run
 * (its phases, the store calls, the outcome), with no dependency of its own. `onceonly/otel` is one
 * implementation (OpenTelemetry metrics and spans); any object of this shape fits. When no
 * `telemetry` option is given nothing here is called and nothing is allocated per delivery.
 */
import { ConfigError } from './errors.js';
import type { InboxStore } from './inbox.js';

/**
 * The phases of a run. `verify`, `handler` and `accept` are timed; `claim`, `extend`, `confirm`
 * and `release` are store calls (for an inbox run `confirm` is the entry's completion and
 * `release` its retry or burial), and `accept` writes a delivery into the inbox.
 */
export type TelemetryPhase = 'verify' | 'accept' | 'claim' | 'handler' | 'extend' | 'confirm' | 'release';

/** What started: a delivery (a request), an inbox entry run by a worker, or a `once()` call. */
export type TelemetryRunKind = 'delivery' | 'inbox' | 'once';

/** Where a run comes from; bounded values only (never an event id or key). */
export interface TelemetryRunInfo {
  readonly kind: TelemetryRunKind;
  /** The provider's name (`stripe`), for receivers. */
  readonly provider: string | undefined;
  /** The receiver's name (key space), for receivers. */
  readonly receiver: string | undefined;
  /** The store's kind: `memory`, `redis`, `postgres`, `mysql`, `sqlite`, or `custom`. */
  readonly store: string;
  /**
   * Inbox runs: the headers the inbox kept with the entry, where the accepting delivery's trace
   * context is found ({@link TRACE_HEADER}) when telemetry was on when it was accepted.
   */
  readonly headers?: readonly (readonly [string, string])[] | undefined;
}

/** How a run ended: a `DeliveryResult` fits, and so does a `once()` result. */
export interface TelemetryResult {
  readonly outcome: string;
  readonly status?: number | undefined;
  readonly degraded?: string | undefined;
  readonly code?: string | undefined;
  readonly provider?: string | undefined;
  readonly receiver?: string | undefined;
  readonly id?: string | undefined;
  readonly type?: string | undefined;
  readonly attempt?: number | undefined;
  readonly error?: unknown;
  readonly durationMs?: number | undefined;
}

/** One phase under way: ended once, with the error it failed with, and for store calls whether the lease was still held. */
export interface TelemetryPhaseHandle {
  end(error?: unknown, held?: boolean): void;
}

/** One run (a delivery, an inbox entry's run, a `once()` call) as telemetry sees it. */
export interface TelemetryRun {
  /** A phase begins. */
  phase(name: TelemetryPhase): TelemetryPhaseHandle;
  /** Runs `fn` inside the run's context (its span is then the parent of the handler's own spans). */
  wrap<T>(fn: () => T): T;
  /**
   * Inbox mode: a header to keep with the accepted entry (a W3C `traceparent` of this run), so the
   * worker's run can link back to the accepting delivery.
   */
  carrier?(): readonly [string, string] | undefined;
  /** The run ended. */
  end(result: TelemetryResult): void;
}

/**
 * The telemetry option of `createReceiver`, `once()` and the inbox worker. `onceonly/otel`'s `otel()`
 * makes one; errors an implementation throws are its own (keep it simple and total).
 */
export interface Telemetry {
  /** A run begins. */
  start(info: TelemetryRunInfo): TelemetryRun;
  /**
   * Every result a receiver reports (each event of a batch, each worker run, a failed take), or
   * that `once()` returns: counted by outcome.
   */
  outcome(result: TelemetryResult, source: 'receiver' | 'once'): void;
  /** Inbox mode: the receiver's inbox, to observe its entries by state and the oldest due one. */
  observeInbox?(inbox: InboxStore, receiver: string): void;
}

/** The header under which an accepted inbox entry keeps the accepting delivery's trace context. */
export const TRACE_HEADER = 'x-onceonly-traceparent';

/** The telemetry an option names (checked once, at construction), or undefined. */
export function resolveTelemetry(option: Telemetry | undefined): Telemetry | undefined {
  if (option === undefined) return undefined;
  if (
    option === null ||
    typeof option !== 'object' ||
    typeof option.start !== 'function' ||
    typeof option.outcome !== 'function'
  ) {
    throw new ConfigError(
      'invalid_option',
      'onceonly: telemetry must have start() and outcome() methods, such as otel() from onceonly/otel',
    );
  }
  return option;
}

/**
 * Runs a store call as a telemetry phase: ended with the call's error, or with whether the lease
 * was still held when the call answers a boolean.
 */
export function timedPhase<T>(
  run: TelemetryRun | undefined,
  name: TelemetryPhase,
  call: () => PromiseLike<T>,
): PromiseLike<T> {
  if (run === undefined) return call();
  const phase = run.phase(name);
  let pending: PromiseLike<T>;
  try {
    pending = call();
  } catch (error) {
    phase.end(error);
    throw error;
  }
  return pending.then(
    (value) => {
      phase.end(undefined, typeof value === 'boolean' ? value : undefined);
      return value;
    },
    (error: unknown) => {
      phase.end(error);
      throw error;
    },
  );
}

const KIND = Symbol.for('onceonly.storeKind');

/** Marks a built-in store with its kind (`redis`, `postgres`...), for telemetry and health. */
export function markKind<S extends object>(kind: string, store: S): S {
  Object.defineProperty(store, KIND, { value: kind, enumerable: false });
  return store;
}

/** The store's kind as marked, else `custom`. */
export function storeKind(store: object): string {
  const kind = (store as Record<symbol, unknown>)[KIND];
  return typeof kind === 'string' ? kind : 'custom';
}
