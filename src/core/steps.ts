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
  type Jsonified,
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
  type Jsonified,
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
  // A lone surrogate would reach the hash as U+FFFD: two such names would share a key.
  if (typeof name !== 'string' || !plainText(name)) {
    throw new StepError(
      'invalid_step',
      String(name),
      'onceonly: a step name is well-formed text without NUL',
    );
  }
  const digest = createHash('sha256').update(`onceonly-step\n${key}\n${name}`, 'utf8').digest('base64url');
  return `oo_${digest.slice(0, 32)}`;
}

const utf8Bytes = (s: string) => Buffer.byteLength(s, 'utf8');

// A lone surrogate, or NUL (which PostgreSQL's text cannot hold): no store could keep such a name.
const UNKEEPABLE = /\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const plainText = (s: string) => !UNKEEPABLE.test(s);

/** A key's idempotency key, or for a run without one (unkeyed) an error when it is asked for. */
function keyFor(key: string | undefined, name: string): string {
  if (key === undefined) {
    throw new ConfigError(
      'unkeyed',
      'onceonly: this delivery has no key (the provider sent no usable id), so it has no stable idempotency key',
    );
  }
  return idempotencyKeyOf(key, name);
}

/** What a step's function gets; its idempotency key is made when read. */
class StepRun implements StepContext {
  constructor(
    readonly attempt: number,
    readonly signal: AbortSignal,
    private readonly key: string | undefined,
    private readonly name: string,
  ) {}

  get idempotencyKey(): string {
    return keyFor(this.key, this.name);
  }
}

/** Where a run without a lease keeps its steps: nowhere (they run every time, as documented). */
const NOWHERE: StepStore = {
  load: async () => new Map(),
  save: async () => true,
};

/** The run a set of steps belongs to: its key (none when unkeyed), attempt, and lease (none unguarded). */
export interface StepsOwner {
  readonly key: string | undefined;
  readonly attempt: number;
  readonly lease: Lease | undefined;
}

/**
 * The steps of one run: loads the stored results on the first step of a retry, saves each new one.
 * Without a lease (an unkeyed delivery, fail-open) the same checks, memo and JSON apply, and nothing
 * is kept.
 */
export class RunSteps {
  #stored: Promise<ReadonlyMap<string, string>> | undefined;
  readonly #running = new Map<string, Promise<unknown>>();
  // The bytes of the key's steps, stored and being saved: a step reserves its bytes before its
  // save, so steps saved at once cannot pass the bound together.
  #bytes = 0;
  private readonly store: StepStore | undefined;

  constructor(
    store: StepStore | undefined,
    private readonly owner: StepsOwner,
    private readonly storeTimeoutMs: number,
    private readonly signal: () => AbortSignal,
  ) {
    this.store = owner.lease === undefined ? NOWHERE : store;
  }

  step<R>(name: string, fn: (ctx: StepContext) => R | Promise<R>): Promise<Jsonified<Awaited<R>>> {
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
    // One run per name: a second call while the first runs, or after it, gets the same result, or
    // the same error (retry inside `fn`, not around the step: a save that failed may have landed).
    let running = this.#running.get(name) as Promise<Jsonified<Awaited<R>>> | undefined;
    if (running === undefined) {
      running = this.#run(name, fn) as Promise<Jsonified<Awaited<R>>>;
      this.#running.set(name, running);
    }
    return running;
  }

  #load(store: StepStore): Promise<ReadonlyMap<string, string>> {
    const { owner } = this;
    // Attempt 1 is the key's first run in its life: nothing can be stored yet, so no read.
    if (owner.attempt === 1 || owner.lease === undefined) return Promise.resolve(new Map());
    const lease = owner.lease;
    return withDeadline('steps', this.storeTimeoutMs, () => store.load(lease)).then((stored) => {
      for (const [n, v] of stored) this.#bytes += utf8Bytes(n) + utf8Bytes(v);
      return stored;
    });
  }

  async #run(name: string, fn: (ctx: StepContext) => unknown): Promise<unknown> {
    const { store, owner } = this;
    if (!store) {
      throw new ConfigError(
        'steps_unsupported',
        'onceonly: this store keeps no step results (it has no `steps`): ctx.step needs one of the built-in stores, or your store must implement StepStore',
      );
    }
    this.#stored ??= this.#load(store);
    const stored = (await this.#stored).get(name);
    if (stored !== undefined) return parse(stored);
    const signal = this.signal();
    if (signal.aborted) throw signal.reason;
    const text = encode(name, await fn(new StepRun(owner.attempt, signal, owner.key, name)));
    const bytes = utf8Bytes(text);
    if (bytes > STEP_RESULT_MAX_BYTES) {
      throw new StepError(
        'step_too_large',
        name,
        `onceonly: step "${name}" returned ${bytes} bytes of JSON, over the ${STEP_RESULT_MAX_BYTES} a step may keep: return what later steps need (an id), not a whole response`,
      );
    }
    const size = utf8Bytes(name) + bytes;
    // A store may keep less than the bound of every store (DynamoDB: one item of 400 KB).
    const bound = Math.min(STEPS_MAX_BYTES, store.maxBytes ?? STEPS_MAX_BYTES);
    if (this.#bytes + size > bound) {
      throw new StepError(
        'step_too_large',
        name,
        `onceonly: step "${name}" would bring this key's steps to ${this.#bytes + size} bytes, over the ${bound} one key may keep${bound < STEPS_MAX_BYTES ? ' on this store' : ''}`,
      );
    }
    this.#bytes += size;
    // Saved even past the deadline: the step's effect happened. The store takes it only from the
    // lease's owner (a run past its deadline has usually released the key: refused then, and the
    // next attempt calls again with the same idempotency key).
    let saved = false;
    try {
      saved =
        owner.lease === undefined ||
        (await withDeadline('step', this.storeTimeoutMs, () => store.save(owner.lease!, name, text)));
    } finally {
      if (!saved) this.#bytes -= size;
    }
    if (!saved) {
      throw new StepError(
        'step_refused',
        name,
        `onceonly: step "${name}" ran, but the store refused its result: the lease on this key was lost to another owner (it ran out and was taken over, or the key was released), which runs the step itself; stop here`,
      );
    }
    return parse(text);
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
