/**
 * Durable steps (`ctx.step(name, fn)`) and idempotency keys (`ctx.idempotencyKey(name)`).
 *
 * A step's result is written under the run's key, by the lease's owner only, before the handler goes
 * on; a later run of the same key (after a throw, a deadline, a crash and takeover, a lost lease)
 * gets the stored result instead of running the step again. The store keeps a key's steps through
 * releases and takeovers, drops them when the key completes (it never runs again), and starts a new
 * life of the key (attempt 1) with none. See `StepStore` (core/step-store.ts) for the contract.
 */

export {
  STEP_NAME_MAX,
  STEP_RESULT_MAX_BYTES,
  STEPS_MAX_BYTES,
  type StepContext,
  type StepStore,
} from './step-store.js';

import { createHash } from 'node:crypto';
import { ConfigError, OnceonlyError } from './errors.js';
import type { Lease } from './lease.js';
import {
  STEP_NAME_MAX,
  STEP_RESULT_MAX_BYTES,
  STEPS_MAX_BYTES,
  type StepContext,
  type StepStore,
} from './step-store.js';
import { withDeadline } from './timers.js';

/** A step that cannot be run or kept: `code` says which (see the docs of each). */
export class StepError extends OnceonlyError {
  /** The step's name. */
  readonly step: string;
  constructor(
    code: 'step_too_large' | 'step_not_json' | 'step_refused' | 'invalid_step',
    step: string,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(code, message, { status: 500, ...options });
    this.step = step;
  }
}

/**
 * The idempotency key of a step of the run of `key` (the receiver's space and the event's id): the
 * same on every attempt and in every process, different across events, receivers and steps. `oo_`
 * and 32 base64url characters (192 bits of SHA-256), 35 in all: within every API's limit we know
 * (Razorpay's 36, Square's 45), and safe in an HTTP header.
 */
export function idempotencyKeyOf(key: string, name = ''): string {
  if (typeof name !== 'string')
    throw new StepError('invalid_step', String(name), 'onceonly: a step name is a string');
  const digest = createHash('sha256').update(`onceonly-step\n${key}\n${name}`, 'utf8').digest('base64url');
  return `oo_${digest.slice(0, 32)}`;
}

const utf8Bytes = (s: string) => Buffer.byteLength(s, 'utf8');

// A lone surrogate, or NUL (which PostgreSQL's text cannot hold): no store could keep such a name.
const UNKEEPABLE = /\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const plainText = (s: string) => !UNKEEPABLE.test(s);

/** The steps of one run: loads the stored results on the first step of a retry, saves each new one. */
export class RunSteps {
  #stored: Promise<ReadonlyMap<string, string>> | undefined;
  readonly #running = new Map<string, Promise<unknown>>();
  #bytes = 0;

  constructor(
    private readonly store: StepStore | undefined,
    private readonly lease: Lease,
    private readonly storeTimeoutMs: number,
    private readonly signal: () => AbortSignal,
  ) {}

  step<R>(name: string, fn: (ctx: StepContext) => R | Promise<R>): Promise<Awaited<R>> {
    if (typeof name !== 'string' || name === '' || name.length > STEP_NAME_MAX || !plainText(name)) {
      return Promise.reject(
        new StepError(
          'invalid_step',
          String(name),
          `onceonly: a step name is well-formed text of 1 to ${STEP_NAME_MAX} characters without NUL; got ${typeof name === 'string' ? `${name.length} characters` : typeof name}`,
        ),
      );
    }
    if (typeof fn !== 'function') {
      return Promise.reject(
        new StepError('invalid_step', name, `onceonly: step "${name}" needs a function to run`),
      );
    }
    // One run per name: a second call while the first runs (or after it) gets the same result.
    let running = this.#running.get(name) as Promise<Awaited<R>> | undefined;
    if (running === undefined) {
      running = this.#run(name, fn);
      this.#running.set(name, running);
    }
    return running;
  }

  async #run<R>(name: string, fn: (ctx: StepContext) => R | Promise<R>): Promise<Awaited<R>> {
    const store = this.store;
    if (!store) {
      throw new ConfigError(
        'steps_unsupported',
        'onceonly: this store keeps no step results (it has no `steps`): ctx.step needs one of the built-in stores, or your store must implement StepStore',
      );
    }
    // Attempt 1 is the key's first run in its life: nothing can be stored yet, so no read.
    if (this.#stored === undefined) {
      this.#stored =
        this.lease.attempt === 1
          ? Promise.resolve(new Map())
          : withDeadline('steps', this.storeTimeoutMs, () => store.load(this.lease)).then((stored) => {
              for (const [n, v] of stored) this.#bytes += utf8Bytes(n) + utf8Bytes(v);
              return stored;
            });
    }
    const stored = (await this.#stored).get(name);
    if (stored !== undefined) return parse(stored) as Awaited<R>;
    const signal = this.signal();
    if (signal.aborted) throw signal.reason;
    const value = await fn({
      attempt: this.lease.attempt,
      signal,
      idempotencyKey: idempotencyKeyOf(this.lease.key, name),
    });
    const text = encode(name, value);
    const bytes = utf8Bytes(text);
    if (bytes > STEP_RESULT_MAX_BYTES) {
      throw new StepError(
        'step_too_large',
        name,
        `onceonly: step "${name}" returned ${bytes} bytes of JSON, over the ${STEP_RESULT_MAX_BYTES} a step may keep: return what later steps need (an id), not a whole response`,
      );
    }
    const total = this.#bytes + utf8Bytes(name) + bytes;
    // A store may keep less than the bound of every store (DynamoDB: one item of 400 KB).
    const bound = Math.min(STEPS_MAX_BYTES, store.maxBytes ?? STEPS_MAX_BYTES);
    if (total > bound) {
      throw new StepError(
        'step_too_large',
        name,
        `onceonly: step "${name}" would bring this key's steps to ${total} bytes, over the ${bound} one key may keep${bound < STEPS_MAX_BYTES ? ' on this store' : ''}`,
      );
    }
    // Written whatever the signal says: the step's effect happened, and its owner (checked by the
    // store) keeps the next run from doing it again.
    const saved = await withDeadline('step', this.storeTimeoutMs, () => store.save(this.lease, name, text));
    if (!saved) {
      throw new StepError(
        'step_refused',
        name,
        `onceonly: step "${name}" ran, but the store refused its result: the lease on this key was lost to another owner (it ran out and was taken over, or the key was released), which runs the step itself; stop here`,
      );
    }
    this.#bytes = total;
    return parse(text) as Awaited<R>;
  }
}

/** A result as stored: its JSON text, or '' for undefined. */
function encode(name: string, value: unknown): string {
  if (value === undefined) return '';
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (cause) {
    throw new StepError('step_not_json', name, `onceonly: step "${name}" returned a value JSON cannot hold`, {
      cause,
    });
  }
  if (text === undefined) {
    throw new StepError(
      'step_not_json',
      name,
      `onceonly: step "${name}" returned a ${typeof value}, which JSON cannot hold`,
    );
  }
  return text;
}

/** The result as every run sees it, the first as a later one: what JSON makes of it. */
function parse(text: string): unknown {
  return text === '' ? undefined : JSON.parse(text);
}
