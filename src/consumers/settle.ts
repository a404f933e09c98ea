/**
 * What every queue consumer adapter shares: a message run through `once()` under its key, and the
 * one decision of what the broker must then do with it, so that no adapter acknowledges a failure
 * (the message would be lost) or requeues a poison message forever (it would loop). The adapters
 * (amqp, nats, bullmq, mqtt, sqs) only translate the verdict into their broker's verbs:
 *
 * | result | verdict |
 * | --- | --- |
 * | processed, duplicate, lease-lost, conflict | `ack`: done (redelivering cannot change it) |
 * | failed, attempts left | `retry` after `retryDelay(attempt)` |
 * | failed on attempt `maxAttempts` or later | `dead`: the broker's dead-letter facility |
 * | in-flight (another consumer runs it) | `retry` when its lease ends (0.25 to 5 s, plus up to 0.5 s at random): it ends as a duplicate, or runs if that run fails |
 * | unclaimed (store unavailable, no time) | `retry`: nothing ran (an attempt is spent only when a claim that timed out landed late, and was released) |
 * | redelivered after 2 × `maxAttempts` claims that never ended (runs killed) | `dead` without running |
 * | the key function threw (a malformed message) | `dead` without running |
 *
 * Attempts are the claim's (`once()`'s `attempt`: runs started, crashed ones included, kept by the
 * store), not the broker's delivery count, which also counts the redeliveries of a store outage or
 * of a message in flight elsewhere, where nothing ran. A first delivery always runs, so a message
 * re-driven from the dead-letter queue after a fix gets one more run; an adapter that redelivers a
 * message as a copy of its own (a retry) marks the copy, so the copy is not a first delivery.
 */
import { ConfigError } from '../errors.js';
import {
  type Duration,
  type OnceOptions,
  type OnceResult,
  onceWith,
  parseDuration,
  type Store,
  type WorkContext,
  wheel,
} from '../once.js';

export interface ConsumerOptions<M> extends OnceOptions {
  /**
   * The dedup key of a message. Each adapter's default is the broker's message id; key on an id of
   * your own when one event may be published as two messages.
   */
  key?: ((message: M) => string) | undefined;
  /**
   * Runs of a message (failed, timed out or killed) before it goes to the broker's dead-letter
   * facility instead of another redelivery.
   * @default 5
   */
  maxAttempts?: number | undefined;
  /**
   * The wait before a failed message is redelivered, by the attempt that failed (1 for the first):
   * a duration, or a function of the attempt.
   * @default (attempt) => 1 s × 2^(attempt − 1), at most 5 min, less up to a fifth at random
   */
  retryDelay?: Duration | ((attempt: number) => Duration) | undefined;
  /** Called with each message's result (metrics, audit); what it throws is ignored. */
  onResult?: ((message: M, result: ConsumerResult) => unknown) | undefined;
}

/**
 * A message's result: `once()`'s; `unclaimed` when no claim could be made (the store was unavailable
 * or did not answer in time): nothing ran; `exhausted` when it was redelivered after `maxAttempts`
 * runs and was not run again; `invalid` when `key` threw.
 */
export type ConsumerResult =
  | OnceResult<unknown>
  | { outcome: 'unclaimed'; error: unknown }
  | { outcome: 'exhausted'; attempt: number }
  | { outcome: 'invalid'; error: unknown };

/** What the broker must do with the message. */
export type Verdict =
  | { readonly action: 'ack' }
  | { readonly action: 'retry'; readonly delayMs: number }
  | { readonly action: 'dead'; readonly reason: string };

/** How one delivery of a message looks to the adapter. */
export interface Delivery {
  /** Whether the broker delivers it for the first time (not a redelivery): it then always runs. */
  readonly first: boolean;
  /** Tells the broker the message is still being worked on, called every `everyMs` while it runs. */
  readonly heartbeat?: { readonly everyMs: number; readonly beat: () => unknown } | undefined;
}

/** Redelivery of a message in flight elsewhere: soon, since that run most likely ends first. */
const IN_FLIGHT_MS = { min: 250, max: 5_000, jitter: 500 };
const DEFAULT_MAX_ATTEMPTS = 5;
/** Claims of a message that never ended, as a multiple of maxAttempts, before it is dead-lettered unrun. */
const EXHAUSTED_FACTOR = 2;

class Exhausted extends Error {}

/**
 * The shared runner of an adapter: `run(message, delivery)` runs the work once under the message's
 * key and resolves with the verdict and the result. It never rejects.
 */
export function consumerRunner<M>(
  store: Store,
  work: (message: M, ctx: WorkContext) => unknown,
  options: ConsumerOptions<M>,
  defaultKey: (message: M) => string,
): (message: M, delivery: Delivery) => Promise<{ verdict: Verdict; result: ConsumerResult }> {
  const {
    key = defaultKey,
    maxAttempts = DEFAULT_MAX_ATTEMPTS,
    retryDelay,
    onResult,
    ...onceOptions
  } = options;
  if (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1)
    throw new ConfigError(
      'invalid_option',
      `onceonly: maxAttempts must be a positive integer, got ${maxAttempts}`,
    );
  // Refused here, not per message: a key that is no function would dead-letter every message as
  // keyless, a work that is none would fail every run into the dead letters.
  for (const [name, given] of [
    ['work', work],
    ['key', key],
    ['onResult', onResult === undefined ? () => {} : onResult],
  ] as const)
    if (typeof given !== 'function')
      throw new ConfigError(
        'invalid_option',
        `onceonly: ${name} must be a function, got ${given === null ? 'null' : typeof given}`,
      );
  const delayOf = retryDelayOf(retryDelay);
  // Resolved here, once: a bad duration (or logger) is the caller's mistake, not a message's, and
  // no message pays for parsing them again.
  const runOnce = onceWith(onceOptions);

  return async (message, delivery) => {
    let result: ConsumerResult;
    let id: string;
    try {
      id = key(message);
      if (typeof id !== 'string' || id === '')
        throw new TypeError(`the key is ${typeof id === 'string' ? 'empty' : typeof id}`);
    } catch (error) {
      return settled(
        message,
        { outcome: 'invalid', error },
        { action: 'dead', reason: `no key: ${errorText(error)}` },
      );
    }
    const beating = delivery.heartbeat ? heartbeat(delivery.heartbeat) : undefined;
    try {
      result = await runOnce(store, id, (ctx) => {
        // Every run of this key so far was killed before it could fail: a poison message.
        // Twice maxAttempts: a claim also ends unrun when the store answered it too late (it is
        // released, its attempt spent) or a run outlived its lease under load; a slow store must
        // not send good messages to the dead letters, only a message that kills its runs.
        if (!delivery.first && ctx.attempt > EXHAUSTED_FACTOR * maxAttempts) throw new Exhausted();
        return work(message, ctx);
      });
      if (result.outcome === 'failed' && result.error instanceof Exhausted)
        result = { outcome: 'exhausted', attempt: result.attempt };
    } catch (error) {
      result = { outcome: 'unclaimed', error };
    } finally {
      beating?.();
    }
    let verdict: Verdict;
    try {
      verdict = verdictOf(result, maxAttempts, delayOf);
    } catch {
      // A retryDelay of one's own that threw (or gave no duration): the default delay, never a
      // message left unsettled.
      verdict = verdictOf(result, maxAttempts, defaultDelay);
    }
    return settled(message, result, verdict);
  };

  function settled(message: M, result: ConsumerResult, verdict: Verdict) {
    try {
      onResult?.(message, result);
    } catch {
      // An observer's bug must not change what the broker is told.
    }
    return { verdict, result };
  }
}

/** The verdict of a result (see the table above). */
export function verdictOf(
  result: ConsumerResult,
  maxAttempts: number,
  delayOf: (attempt: number) => number,
): Verdict {
  switch (result.outcome) {
    case 'processed':
    case 'duplicate':
    case 'lease-lost':
    case 'conflict':
      return { action: 'ack' };
    case 'failed':
      return result.attempt >= maxAttempts
        ? {
            action: 'dead',
            reason: `failed on attempt ${result.attempt} of ${maxAttempts}: ${errorText(result.error)}`,
          }
        : { action: 'retry', delayMs: delayOf(result.attempt) };
    case 'in-flight': {
      const left = result.expiresAt.getTime() - Date.now();
      // Plus up to half a second at random: the messages a killed process held all come back
      // deferred to the same lease end, and run together they share the fate of a message among
      // them that kills its process (each killed run spends an attempt).
      const wait = Math.min(IN_FLIGHT_MS.max, Math.max(IN_FLIGHT_MS.min, left));
      return { action: 'retry', delayMs: Math.round(wait + Math.random() * IN_FLIGHT_MS.jitter) };
    }
    case 'unclaimed':
      return { action: 'retry', delayMs: delayOf(1) };
    case 'exhausted':
      return {
        action: 'dead',
        reason: `redelivered after ${result.attempt - 1} claims that never ended (runs killed?)`,
      };
    case 'invalid':
      return { action: 'dead', reason: `no key: ${errorText(result.error)}` };
  }
}

/** The longest retry delay: 12 hours (SQS's longest visibility timeout; far inside a timer's 2^31 ms). */
export const MAX_RETRY_DELAY_MS = 43_200_000;

const defaultDelay = (attempt: number) => {
  const full = Math.min(1_000 * 2 ** Math.min(attempt - 1, 20), 300_000);
  return Math.round(full * (1 - Math.random() / 5));
};

/** The retry delay by failed attempt, in ms, at most {@link MAX_RETRY_DELAY_MS}. */
export function retryDelayOf(option: ConsumerOptions<unknown>['retryDelay']): (attempt: number) => number {
  if (option === undefined) return defaultDelay;
  const capped = (ms: number) => Math.min(MAX_RETRY_DELAY_MS, ms);
  if (typeof option === 'function') return (attempt) => capped(parseDuration(option(attempt), 'retryDelay'));
  const ms = capped(parseDuration(option, 'retryDelay'));
  return () => ms;
}

/**
 * Beats every `everyMs` (at least 100 ms) until stopped: on the engine's shared clock, not a timer
 * of its own per message (most runs end long before their first beat). Unref'd: a beat keeps no
 * process alive.
 */
function heartbeat({ everyMs, beat }: NonNullable<Delivery['heartbeat']>): () => void {
  const beating = new Beating(Math.max(100, everyMs), beat);
  return () => beating.stop();
}

// A class, not closures: made per message, and a named closure costs a defineProperty per run
// where the code is run through esbuild with keepNames (tsx: the tests, the benchmarks).
class Beating {
  #tick: ReturnType<typeof wheel.add>;
  constructor(
    private readonly period: number,
    private readonly beat: () => unknown,
  ) {
    this.#tick = wheel.add(period, () => this.#fire(), false);
  }

  #fire(): void {
    this.#tick = wheel.add(this.period, () => this.#fire(), false);
    try {
      void Promise.resolve(this.beat()).catch(() => {});
    } catch {
      // The broker will redeliver if it must; the claim's lease still fences the run.
    }
  }

  stop(): void {
    wheel.cancel(this.#tick);
  }
}

/** An error as one line of at most 300 characters (a dead letter's reason, a log line). */
export function errorText(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.length > 300 ? `${text.slice(0, 297)}...` : text;
}

/**
 * The runs an adapter started and has not seen end: added as they start, each gone when it
 * settles; `settled()` is what stop() waits for. The runs never reject (each catches its own end).
 */
export class Runs {
  readonly #runs = new Set<Promise<unknown>>();
  /** Those waiting in any(), woken by the next end (one list, not a race over every run per call). */
  #waiting: Array<() => void> = [];

  add(run: Promise<unknown>): void {
    this.#runs.add(run);
    const end = Runs.#ender(this, run);
    run.then(end, end);
  }

  get size(): number {
    return this.#runs.size;
  }

  /** Until one of them ends (at once when none runs). */
  any(): Promise<void> {
    if (this.#runs.size === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  /** Until every one started so far has ended. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#runs]);
  }

  #end(run: Promise<unknown>): void {
    this.#runs.delete(run);
    if (this.#waiting.length === 0) return;
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const wake of waiting) wake();
  }

  /** The end of `run` (made by a call: no name to keep per run, see Beating). */
  static #ender(runs: Runs, run: Promise<unknown>): () => void {
    return () => runs.#end(run);
  }
}
