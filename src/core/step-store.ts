/**
 * The store's side of durable steps: the contract every store's `steps` keeps, and the bounds the
 * engine holds step names and results to (core/steps.ts runs the steps). Types and constants only,
 * so the store contract (core/types.ts, core/inbox.ts) imports nothing that runs.
 */
import type { Lease } from './lease.js';

/**
 * What a store offers for durable steps, on its claims (`store.steps`) and on its inbox
 * (`store.inbox.steps`): the results stored under the key a lease holds. Optional for your own
 * store: without it `ctx.step` throws a ConfigError (`steps_unsupported`).
 *
 * - `load` returns the results stored under the lease's key, by name, exactly as saved; empty when
 *   there are none. A fresh life of the key (a claim or accept of a key that was absent, or whose
 *   completed record's retention ran out) has none.
 * - `save` stores one result under the lease's key when the lease's token still owns it (the
 *   record is processing under that token, its lease run out or not, as with `extend`), replacing
 *   one of the same name; `false` and no change otherwise (a stale owner never writes over a newer
 *   owner's steps). The steps stay through `release` (inbox: `retry`, `bury` and `requeue`) and
 *   takeovers, and go with `confirm` (inbox: `complete`) and with the key itself.
 */
export interface StepStore {
  /**
   * The most this store keeps of one key's steps together (names and results, UTF-8 bytes), when
   * it keeps less than {@link STEPS_MAX_BYTES}: DynamoDB holds them in the key's item, which has a
   * 400 KB limit. The engine refuses a step past it (`step_too_large`) before it is saved.
   * @default STEPS_MAX_BYTES
   */
  readonly maxBytes?: number | undefined;
  load(lease: Lease): Promise<ReadonlyMap<string, string>>;
  save(lease: Lease, name: string, value: string): Promise<boolean>;
}

/** The longest step name, in UTF-16 code units. */
export const STEP_NAME_MAX = 200;
/** The largest step result, as JSON text in UTF-8 bytes: return an id, not a whole API response. */
export const STEP_RESULT_MAX_BYTES = 64 * 1024;
/** The most all of a key's steps may hold together (names and results, UTF-8 bytes). */
export const STEPS_MAX_BYTES = 1024 * 1024;

/** What a step's function gets: the run's attempt and signal, and the step's idempotency key. */
export interface StepContext {
  /** The run's attempt: 1 on the first run of the key, +1 after every takeover or release. */
  readonly attempt: number;
  /** Aborted when the run's deadline passes or its lease is lost. */
  readonly signal: AbortSignal;
  /** `ctx.idempotencyKey(name)` of this step: pass it to the API the step calls. */
  readonly idempotencyKey: string;
}

/**
 * What a step's result is once it has been through JSON, as every run gets it (the first one too):
 * `toJSON` applied (a `Date` is a string), functions, symbols and `undefined` left out of objects and
 * `null` in arrays, a top-level `undefined` kept as `undefined`.
 */
export type Jsonified<T> = T extends { toJSON(...args: never[]): infer J }
  ? Jsonified<J>
  : T extends string | number | boolean | null | undefined
    ? T
    : T extends bigint | symbol | ((...args: never[]) => unknown)
      ? never
      : T extends readonly unknown[]
        ? { -readonly [I in keyof T]: InArray<T[I]> }
        : T extends object
          ? {
              -readonly [K in keyof T as K extends string
                ? Dropped<T[K]> extends true
                  ? never
                  : K
                : never]: Jsonified<T[K]>;
            }
          : unknown;

type Dropped<V> = [V] extends [undefined | symbol | ((...args: never[]) => unknown)] ? true : false;
type InArray<V> = V extends undefined | symbol | ((...args: never[]) => unknown) ? null : Jsonified<V>;
