/**
 * What the consumer bench needs of a broker (bench/consumers.bench.ts): a queue filled ahead of the
 * timed part, then drained by a consumer written by hand (acknowledging after the handler) or by
 * the onceonly adapter, with the same concurrency. One file per broker in this folder.
 */
import type { Store } from '../../../src/once.js';

export interface BenchKit {
  readonly name: string;
  /** Only the memory store beside the hand-written consumer (a broker slow enough that Redis adds nothing to learn). */
  readonly memoryOnly?: boolean;
  /** Makes an empty queue (stream, topic) named `queue`. */
  setup(queue: string): Promise<void>;
  /** Publishes `n` messages of `body`, ids `<prefix>-<i>`, before the timed part. */
  fill(queue: string, n: number, prefix: string, body: Uint8Array): Promise<void>;
  /**
   * Starts a consumer of `queue`, `concurrency` messages at once, that calls `handler` per message
   * and then acknowledges it: by hand (`store` undefined: the handler is given the message's id, as
   * a hand-written consumer that deduplicates keys by it), or through the onceonly adapter on
   * `store`. Resolves with a function that stops it.
   */
  consume(
    queue: string,
    concurrency: number,
    handler: (id: string) => unknown,
    store: Store | undefined,
  ): Promise<() => Promise<void>>;
  teardown(queue: string): Promise<void>;
}
