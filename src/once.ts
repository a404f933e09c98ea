import { type Duration, parseDuration } from './core/duration.js';
import {
  type DegradedReason,
  type EngineResult,
  idempotencyKeyFrom,
  runClaimed,
  signalFrom,
  stepOf,
  type WorkContext,
} from './core/engine.js';
import { keyPart } from './core/keys.js';
import { causeOf, emit, type Logger, resolveLogger } from './core/logger.js';
import type { Jsonified, StepContext } from './core/steps.js';
import { resolveTelemetry, storeKind, type Telemetry } from './core/telemetry.js';
import { resolveTimings } from './core/timings.js';
import type { Store } from './core/types.js';
import { ConfigError } from './errors.js';

export { type Duration, parseDuration } from './core/duration.js';
export type { WorkContext } from './core/engine.js';
export type { Logger } from './core/logger.js';
export { DEFAULT_STORE_TIMEOUT, DEFAULT_TIMEOUT, resolveTimings } from './core/timings.js';
/** Internal: the queue consumer adapters' heartbeats share the engine's one coarse clock. */
export { wheel } from './core/timers.js';
export type { Store } from './core/types.js';
/** How long a completed key is remembered when nothing else is known: 3 days. */
export const DEFAULT_RETENTION = '3d';
const DEFAULT_RETENTION_MS = parseDuration(DEFAULT_RETENTION);

export interface OnceOptions {
  /**
   * How long the work may run before its signal aborts and it counts as failed (claim released).
   * @default '30s'
   */
  timeout?: Duration;
  /**
   * How long a claim lives unless extended. It is extended every third of its length while the work
   * runs, so it only runs out when this process dies. It must outlast the longest run you allow, since
   * a run killed at its deadline is exactly the case the lease covers: 4 × timeout by default.
   * @default 4 × timeout
   */
  lease?: Duration;
  /**
   * How long a completed key is remembered: at least the source's redelivery window.
   * @default '3d'
   */
  retention?: Duration;
  /**
   * A fingerprint of the work's input (e.g. a SHA-256 of the message body). The same key with another
   * fingerprint is reported as `conflict` instead of `duplicate`.
   */
  fingerprint?: string;
  /**
   * The deadline of each store call (claim, extend, confirm, release). Past it the call counts as a
   * store error: a claim throws `StoreTimeoutError` (nothing ran: let your queue redeliver), a
   * confirm is retried in the background while the lease lasts and the result is degraded.
   * @default '3s' (at most half the lease)
   * @example once(store, key, work, { storeTimeout: '1s' })
   */
  storeTimeout?: Duration;
  /**
   * Where failed runs, degraded runs, conflicts and lost leases are logged (once per call, with
   * their cause): anything with `warn` and `error`, such as pino or winston; `false` to silence.
   * @default console
   * @example once(store, key, work, { logger: pino() })
   */
  logger?: Logger | false;
  /**
   * Where the call is reported: a run with its phases (claim, handler, confirm or release) and its
   * outcome; the work runs inside the run's context. `otel()` from `onceonly/otel` fits.
   * @default undefined
   * @example once(store, key, work, { telemetry })
   */
  telemetry?: Telemetry;
}

export type OnceResult<T> =
  /** The work ran and its claim was confirmed. */
  | { outcome: 'processed'; value: T; attempt: number; degraded?: DegradedReason | undefined }
  /** The work ran, but its lease ran out and another owner took over: report it loudly. */
  | { outcome: 'lease-lost'; value: T; attempt: number }
  /** The work threw or passed its deadline; the claim was released so a redelivery gets in. */
  | { outcome: 'failed'; error: unknown; attempt: number; degraded?: DegradedReason | undefined }
  /** The key was already completed: the work did not run. */
  | { outcome: 'duplicate' }
  /** Another owner is running this key right now: redeliver later. */
  | { outcome: 'in-flight'; attempt: number; expiresAt: Date }
  /** The key is taken with another fingerprint (only when `fingerprint` is given). */
  | { outcome: 'conflict'; found: 'in-flight' | 'completed' };

/**
 * Runs `work` at most once per `key` to completion, for any at-least-once source: queue consumers,
 * job retries, cron. Claims the key under a short lease, runs the work under its deadline with the
 * lease extended while it runs, then confirms the key for `retention` or releases it on failure.
 * A store error on claim is thrown (nothing ran): let your queue redeliver.
 *
 * @example
 * const result = await once(store, `orders:${msg.id}`, async ({ attempt, signal }) => {
 *   await chargeCard(msg.body, { attempt, signal });
 * }, { timeout: '20s', retention: '7d' });
 * if (result.outcome === 'failed' || result.outcome === 'in-flight') msg.nack(); else msg.ack();
 */
export function once<T>(
  store: Store,
  key: string,
  work: (ctx: WorkContext) => T | Promise<T>,
  options: OnceOptions = {},
): Promise<OnceResult<T>> {
  // Not an async function around the one below (a promise and a tick more per call); a bad key or
  // option rejects all the same.
  try {
    checkKey(key);
    return runOnce(store, key, work, resolveOnce(options));
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * `once()` with its options resolved once, for a caller that runs it per message (the queue
 * consumer adapters): the same calls, without parsing the durations and checking the logger and
 * telemetry again for every message. Bad options throw here. Not part of the public API.
 */
export function onceWith(
  options: OnceOptions = {},
): <T>(store: Store, key: string, work: (ctx: WorkContext) => T | Promise<T>) => Promise<OnceResult<T>> {
  const resolved = resolveOnce(options);
  return (store, key, work) => {
    try {
      checkKey(key);
      return runOnce(store, key, work, resolved);
    } catch (error) {
      return Promise.reject(error);
    }
  };
}

interface ResolvedOnce {
  readonly engine: Parameters<typeof runClaimed>[3];
  readonly logger: Logger | undefined;
  readonly telemetry: Telemetry | undefined;
}

function resolveOnce(options: OnceOptions): ResolvedOnce {
  const { timeoutMs, leaseMs, retentionMs, storeTimeoutMs } = resolveTimings(options);
  return {
    engine: {
      leaseMs,
      timeoutMs,
      storeTimeoutMs,
      retentionMs: retentionMs ?? DEFAULT_RETENTION_MS,
      fingerprint: options.fingerprint,
    },
    logger: resolveLogger(options.logger),
    telemetry: resolveTelemetry(options.telemetry),
  };
}

function checkKey(key: string): void {
  if (typeof key !== 'string' || key === '') {
    throw new ConfigError('invalid_key', 'onceonly: once() needs a non-empty string key');
  }
}

async function runOnce<T>(
  store: Store,
  key: string,
  work: (ctx: WorkContext) => T | Promise<T>,
  { engine, logger, telemetry }: ResolvedOnce,
): Promise<OnceResult<T>> {
  // Any string is a valid key: long or unprintable ones are hashed losslessly (see core/keys.ts).
  const result = telemetry
    ? await traced(telemetry, store, keyPart(key), visible(work), engine)
    : await runClaimed(store, keyPart(key), visible(work), engine);
  logOnce(logger, key, result);
  return result;
}

/** once() with telemetry: one run, its phases, its outcome; a claim that throws ends it as store-unavailable. */
async function traced<T>(
  telemetry: Telemetry,
  store: Store,
  key: string,
  work: (ctx: WorkContext) => T | Promise<T>,
  engine: Parameters<typeof runClaimed>[3],
): Promise<EngineResult<T>> {
  const started = performance.now();
  const run = telemetry.start({
    kind: 'once',
    provider: undefined,
    receiver: undefined,
    store: storeKind(store),
  });
  let ended: {
    outcome: string;
    degraded?: string | undefined;
    attempt?: number | undefined;
    error?: unknown;
  };
  try {
    const result = await run.wrap(() => runClaimed(store, key, work, { ...engine, telemetry: run }));
    ended = result;
    return result;
  } catch (error) {
    ended = { outcome: 'store-unavailable', error };
    throw error;
  } finally {
    const end = { ...ended!, durationMs: performance.now() - started };
    try {
      telemetry.outcome(end, 'once');
      run.end(end);
    } catch {
      // An observer's bug must not change the result.
    }
  }
}

/** One line for the results that must not pass unseen; none for processed, duplicate, in-flight. */
function logOnce(logger: Logger | undefined, key: string, result: EngineResult<unknown>): void {
  if (!logger) return;
  const at = `once(${JSON.stringify(key.length > 120 ? `${key.slice(0, 117)}...` : key)})`;
  switch (result.outcome) {
    case 'failed':
      emit(
        logger,
        'error',
        `onceonly: ${at} failed on attempt ${result.attempt}: ${causeOf(result.error)}; the claim was released so a redelivery runs it again${
          result.degraded ? ` (degraded: ${result.degraded}: ${causeOf(result.cause)})` : ''
        }`,
        result.error,
      );
      return;
    case 'processed':
      if (result.degraded)
        emit(
          logger,
          'warn',
          `onceonly: ${at} ran on attempt ${result.attempt} but is degraded (${result.degraded}): ${causeOf(result.cause)}; it may run again, check the store`,
        );
      return;
    case 'lease-lost':
      emit(
        logger,
        'warn',
        `onceonly: ${at} finished on attempt ${result.attempt} after its lease ran out and another run took over; fence your writes with attempt, or raise lease`,
      );
      return;
    case 'conflict':
      emit(
        logger,
        'warn',
        `onceonly: ${at} conflict: the key is held with another fingerprint (${result.found})`,
      );
      return;
    default:
      return;
  }
}

/** The work context as the user's work sees it: attempt, lease, and `signal` read through to the run. */
class OnceContext implements WorkContext {
  readonly attempt: number;
  readonly lease: WorkContext['lease'];
  declare readonly signal: AbortSignal;
  constructor(run: WorkContext) {
    this.attempt = run.attempt;
    this.lease = run.lease;
    signalFrom(this, run);
  }

  step<R>(name: string, fn: (ctx: StepContext) => R | Promise<R>): Promise<Jsonified<Awaited<R>>> {
    return stepOf(this, name, fn);
  }

  idempotencyKey(name?: string): string {
    return idempotencyKeyFrom(this, name);
  }
}

function visible<T>(work: (ctx: WorkContext) => T | Promise<T>): (ctx: WorkContext) => T | Promise<T> {
  return (run) => work(new OnceContext(run));
}
