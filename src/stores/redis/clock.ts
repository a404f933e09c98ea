/**
 * The server's clock, carried on this process's monotonic clock: `TIME` is read now and then, sent
 * in the same tick as a claim's SET (so in its round trip), and a free key's lease end is the server
 * time the SET was sent at plus the lease. The offset is taken at the reply, so it is never ahead of
 * the server, and the lease end never later than the key's real one (it is earlier by at most the
 * SET's trip out plus the TIME reply's trip back). The process's own wall clock plays no part.
 */
import type { Wire } from './wire.js';

/** How often the server's clock is read again (one `TIME`, in a claim's round trip). */
export const CLOCK_REFRESH_MS = 10_000;
/** How far this host's wall and monotonic clocks may part before its reading of the server's is redone. */
const CLOCK_PARTED_MS = 100;

export class ServerClock {
  /** Server ms minus `performance.now()`, once read. */
  offset: number | undefined;
  /** When (on `performance.now()`) the offset was read. */
  readAt = Number.NEGATIVE_INFINITY;
  #reading: Promise<void> | undefined;
  // How far behind the server's now the reading may be: its TIME's whole round trip as this process
  // saw it (an event-loop stall while the reply waited counts). And this host's wall clock at the
  // reading: a suspend stops the monotonic clock (not the server's), a step moves the wall clock,
  // and either shows as the two clocks parting.
  #slack = Number.POSITIVE_INFINITY;
  #wallAt = 0;
  // The client's connection when the reading was asked for: a reading from before a reconnect may
  // be of another server's clock.
  #connection: number;

  /**
   * @param connectionCount tells a reconnect (undefined on a cluster or a client it cannot tell).
   * @param onRead runs as each reading is asked for (the first also asks about native
   *   compare-and-set, in the same trip).
   */
  constructor(
    private readonly wire: Wire,
    private readonly connectionCount: (() => number) | undefined,
    private readonly onRead: () => void,
  ) {
    this.#connection = connectionCount?.() ?? 0;
  }

  /** Whether the reading is older than the refresh period at `now`. */
  due(now: number): boolean {
    return now - this.readAt > CLOCK_REFRESH_MS;
  }

  /** Reads `TIME` on the node that holds `key`; one reading at a time. Never rejects. */
  read(key: string): Promise<void> {
    if (this.#reading) return this.#reading;
    const asked = performance.now();
    const askedOn = this.connectionCount?.() ?? 0;
    const time = this.wire.time(key);
    this.onRead();
    this.#reading = time
      .then(
        (reply) => {
          const at = performance.now();
          const [seconds, micros] = reply as [unknown, unknown];
          // String() first: a client with a typeMapping may hand back Buffers.
          const offset = Number(String(seconds)) * 1000 + Math.floor(Number(String(micros)) / 1000) - at;
          if (Number.isFinite(offset)) {
            this.offset = offset;
            this.readAt = at;
            this.#slack = at - asked;
            this.#wallAt = Date.now();
            this.#connection = askedOn;
          }
        },
        () => {},
      )
      .finally(() => {
        this.#reading = undefined;
      });
    return this.#reading;
  }

  /**
   * Whether the client's connection is known to be the one the clock was read on; a reading from an
   * earlier connection is redone at the next claim and vouches for nothing meanwhile.
   */
  #sameConnection(): boolean {
    if (this.connectionCount === undefined) return false;
    if (this.connectionCount() === this.#connection) return true;
    this.readAt = Number.NEGATIVE_INFINITY;
    return false;
  }

  /**
   * The latest the server's now can be, by this process's reading of its clock, to trust a lease
   * end another claim carried in its token; undefined when the reading cannot vouch for that: none
   * yet, older than two refresh periods, taken before the client's connection last changed, or this
   * host's wall and monotonic clocks have parted since (a suspend or a clock step); the clock is read
   * again at the next claim. On Redis Cluster ends are neither carried nor read (no connection count
   * is kept there): `TIME` reads one node's clock, not the key's.
   */
  ceiling(now = performance.now()): number | undefined {
    if (this.offset === undefined || !this.#sameConnection()) return undefined;
    const since = now - this.readAt;
    if (since > 2 * CLOCK_REFRESH_MS) return undefined;
    if (Math.abs(Date.now() - this.#wallAt - since) > CLOCK_PARTED_MS) {
      this.readAt = Number.NEGATIVE_INFINITY;
      return undefined;
    }
    return now + this.offset + this.#slack;
  }
}
