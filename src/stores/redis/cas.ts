/**
 * Native compare-and-set (`SET ... IFEQ`: Valkey 8.1+, Redis 8.4+), asked of the server once, with
 * the first claim (or after the first answer to anything else): until it answers, and on a server
 * without it, confirm runs the Lua script, which makes the same comparison first.
 * With it, a confirm is one plain SET that completes the key only if it still holds exactly the
 * value this lease's claim wrote (kept per lease by the claims), and answers what the key held: any
 * other value is decided from that answer (taken over, released, confirmed already), or by the
 * script while the lease is surely live (gone, renewed).
 * The answer holds for the connection it came on: after a reconnect (a failover may reach another
 * server, or a proxy in front of one) the server is asked again, and confirms run the script until
 * it answers.
 */
import { CLOCK_REFRESH_MS } from './clock.js';
import { serverError, type Wire } from './wire.js';

export class NativeCas {
  /** The server's answer: true with IFEQ, false without, undefined while not known. */
  native: boolean | undefined;
  #probe: Promise<void> | undefined;
  #retryAt = 0;
  #connection = 0;

  constructor(
    private readonly wire: Wire,
    private readonly probeKey: string,
    private readonly connectionCount: (() => number) | undefined,
  ) {}

  /** Asks the server (one SET IFEQ on a key nobody holds); one question at a time. */
  probe(): Promise<void> {
    const askedOn = this.connectionCount?.() ?? 0;
    this.#probe ??= this.wire
      .setIfEq(this.probeKey, '~', '~ never held', '1000')
      .then(
        (reply) => {
          // Only nil says the server compared (the key does not exist). OK means it ignored IFEQ
          // and set the key (a proxy or a mock that drops options it does not know): a confirm
          // there would be an unconditional SET.
          this.native = reply === null || reply === undefined;
          this.#connection = askedOn;
        },
        (err: unknown) => {
          // A server without IFEQ refuses the command: "ERR syntax error" (any ERR). A passing
          // reply (LOADING, OOM, BUSY, READONLY, MASTERDOWN, CLUSTERDOWN, TRYAGAIN...) or a
          // connection error says nothing: asked again at the next reading of the clock.
          if (serverError(err) && /^ERR\b/.test((err as Error).message)) {
            this.native = false;
            this.#connection = askedOn;
          } else this.#retryAt = performance.now() + CLOCK_REFRESH_MS;
        },
      )
      .finally(() => {
        this.#probe = undefined;
      });
    return this.#probe;
  }

  /** Whether a question is out. */
  get asking(): boolean {
    return this.#probe !== undefined;
  }

  /**
   * The server's answer about IFEQ, if it was given on the client's present connection; when the
   * connection changed since, it is forgotten (undefined: the next claim asks again). A client whose
   * connection cannot be told (a cluster, a pool) keeps it: a node without IFEQ says so by a syntax
   * error.
   */
  answer(): boolean | undefined {
    if (this.connectionCount !== undefined && this.connectionCount() !== this.#connection) {
      this.native = undefined;
    }
    return this.native;
  }

  /** Asks again when the answer is not known, no question is out, and the last one did not just fail. */
  askIfUnknown(): void {
    if (this.answer() === undefined && this.#probe === undefined && performance.now() >= this.#retryAt) {
      void this.probe();
    }
  }
}
