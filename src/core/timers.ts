/**
 * Timers that honour any duration. Node's `setTimeout` fires after 1 ms for a delay above
 * 2^31 − 1 ms (about 24.8 days), so a 30-day deadline would abort a job at once; these chain
 * shorter timers instead. Also the one place store calls get their deadline.
 */
import { StoreTimeoutError } from './errors.js';
import type { Store } from './types.js';

/** The longest delay one Node timer can wait: 2^31 − 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A pending {@link later} call; `cancel()` is safe to call at any time, more than once. */
export interface Later {
  cancel(): void;
}

/**
 * Runs `fn` after `ms` (any non-negative duration, chained past {@link MAX_TIMER_MS}). `unref`
 * lets the process exit while it waits.
 */
export function later(fn: () => void, ms: number, options: { unref?: boolean } = {}): Later {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let cancelled = false;
  const arm = (left: number) => {
    const step = Math.min(Math.max(0, left), MAX_TIMER_MS);
    timer = setTimeout(() => {
      if (cancelled) return;
      if (left > MAX_TIMER_MS) arm(left - MAX_TIMER_MS);
      else fn();
    }, step);
    if (options.unref) timer.unref?.();
  };
  arm(ms);
  return {
    cancel() {
      cancelled = true;
      clearTimeout(timer);
    },
  };
}

/** Resolves after `ms`, chained past {@link MAX_TIMER_MS}. */
export function sleep(ms: number, options: { unref?: boolean } = {}): Promise<void> {
  return new Promise((resolve) => later(resolve, ms, options));
}

/**
 * An AbortSignal that aborts with `reason()` after `ms`, for any duration (`AbortSignal.timeout`
 * shares setTimeout's 2^31 − 1 ms limit). `dispose()` stops the timer once the work is over.
 */
export function timeoutSignal(ms: number, reason: () => unknown): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const timer = later(() => controller.abort(reason()), ms, { unref: true });
  return { signal: controller.signal, dispose: () => timer.cancel() };
}

/** One pending event of the {@link wheel}. */
export interface Tick {
  /** When it fires, on {@link leaseNow}'s clock (ms). */
  at: number;
  fn: () => void;
  /** Whether it keeps the process alive while it waits (a deadline someone awaits). */
  ref: boolean;
}

/** A tick as the wheel keeps it: a node of its list (no hashing per add or cancel, as a Set of objects has). */
class Node implements Tick {
  prev: Node | undefined = undefined;
  next: Node | undefined = undefined;
  /** In the wheel's list (false once fired or cancelled). */
  linked = true;
  constructor(
    public at: number,
    public fn: () => void,
    public ref: boolean,
  ) {}
}

/**
 * One shared coarse clock for the many short-lived deadlines of deliveries (store calls, handler
 * deadlines, lease renewals, late confirms): a single timer, armed while anything waits, instead of
 * a timer (or two) per delivery. Events fire within a tick (10 ms) after their time, read on
 * {@link leaseNow}'s clock (so those due during a host's suspend fire at the first tick after it);
 * any duration works, 2^31 ms and beyond included. The timer keeps the process alive only while
 * some waiting event does. Pending events are a doubly linked list: adding and cancelling are a few
 * pointer writes, on the path of every store call.
 */
class Wheel {
  private head: Node | undefined = undefined;
  private tail: Node | undefined = undefined;
  private size = 0;
  private timer: ReturnType<typeof setInterval> | undefined;
  private refs = 0;
  /** Whether the timer is ref'd now; brought in line with `refs` on add and at each tick. */
  private refed = false;
  /** When the timer last fired (or was made), on {@link leaseNow}'s clock. */
  private firedAt = 0;
  static readonly TICK_MS = 10;
  static readonly STALE_MS = 100;

  add(ms: number, fn: () => void, ref: boolean): Tick {
    const now = leaseNow();
    const tick = new Node(now + ms, fn, ref);
    if (this.tail) {
      this.tail.next = tick;
      tick.prev = this.tail;
    } else this.head = tick;
    this.tail = tick;
    this.size++;
    if (ref) this.refs++;
    if (!this.timer || now - this.firedAt > Wheel.STALE_MS) {
      // None yet, or one that stopped firing: made under a test's fake timers since uninstalled
      // (or a loop blocked that long, where a new one costs nothing).
      if (this.timer) clearInterval(this.timer);
      this.timer = setInterval(() => this.fire(), Wheel.TICK_MS);
      this.firedAt = now;
      this.refed = true;
    }
    if (this.refed !== this.refs > 0) this.keepAlive();
    return tick;
  }

  /**
   * Cheap on purpose (a delivery cancels its deadlines as soon as its store calls answer): the
   * timer is stopped or unref'd at its next tick, not here, so a busy process does not re-arm a
   * timer per delivery. An idle one stays alive at most one tick longer.
   */
  cancel(tick: Tick): void {
    if (tick instanceof Node && tick.linked) this.unlink(tick);
  }

  private unlink(node: Node): void {
    node.linked = false;
    if (node.prev) node.prev.next = node.next;
    else this.head = node.next;
    if (node.next) node.next.prev = node.prev;
    else this.tail = node.prev;
    node.prev = undefined;
    node.next = undefined;
    this.size--;
    if (node.ref) this.refs--;
  }

  private keepAlive(): void {
    this.refed = this.refs > 0;
    if (this.refed) this.timer?.ref?.();
    else this.timer?.unref?.();
  }

  private stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.refed = false;
  }

  private fire(): void {
    const now = leaseNow();
    this.firedAt = now;
    // Those due now, found first (an event may add or cancel others while it runs); one cancelled
    // by an earlier one's run does not fire.
    const due: Node[] = [];
    for (let node = this.head; node; node = node.next) if (node.at <= now) due.push(node);
    for (const node of due) {
      if (!node.linked) continue;
      this.unlink(node);
      try {
        node.fn();
      } catch {
        // An event's own failure is its own; the others still fire.
      }
    }
    if (this.size === 0) this.stop();
    else if (this.refed !== this.refs > 0) this.keepAlive();
  }
}

/** The process's one {@link Wheel}. */
export const wheel = new Wheel();

const INLINE = Symbol.for('onceonly.settlesInline');
type LeaseMethods = Pick<Store, 'claim' | 'confirm' | 'release' | 'extend'>;

/**
 * Marks a store whose calls do all their work before they return (the memory store: no I/O, no
 * waiting). Such a call cannot outlive a deadline: no timer can fire before its answer is there.
 */
export function markSettlesInline<S extends LeaseMethods>(store: S): S {
  const own: LeaseMethods = Object.freeze({
    claim: store.claim,
    confirm: store.confirm,
    release: store.release,
    extend: store.extend,
  });
  // Configurable (a Proxy around the store may answer it with anything of its own), not writable;
  // checked at every call, so a method swapped in later gets its deadline from then on.
  Object.defineProperty(store, INLINE, { value: own, enumerable: false, configurable: true });
  return store;
}

/**
 * How far (ms) the wall clock must have run ahead of the monotonic one, since the last suspend
 * counted, for {@link leaseNow} to look at it: above the two clocks' noise (`Date.now()` counts
 * whole ms, `os.uptime()` tens of ms) and any slow drift between them.
 */
const SUSPEND_STEP_MS = 20;
/** The wall clock's lead over the monotonic one, as last seen (lowered when the wall clock is set back). */
let lead = Date.now() - performance.now();
/** The time counted as suspended so far. */
let suspended = 0;
/**
 * On Linux, `os.uptime()` reads CLOCK_BOOTTIME (/proc/uptime): the monotonic clock plus the time
 * the host was suspended, never stepped. Its lead over the monotonic clock, less what was counted.
 */
const bootClock = linuxUptime();
let bootBase = bootClock && bootLead();

/**
 * `os.uptime` on Linux, found without importing `node:os` (edge runtimes have no such module and
 * no boot clock to ask), or undefined.
 */
function linuxUptime(): { uptime(): number } | undefined {
  try {
    const proc = (
      globalThis as { process?: { platform?: string; getBuiltinModule?: (id: string) => unknown } }
    ).process;
    if (proc?.platform !== 'linux') return undefined;
    const os = proc.getBuiltinModule?.('node:os') as { uptime?: () => number } | undefined;
    return typeof os?.uptime === 'function' ? (os as { uptime(): number }) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The boot clock's lead over the monotonic one. `mono` read before the boot clock (a file read,
 * which a loaded host may delay by tens of ms) makes the lead larger by that delay; read after
 * (`mono` omitted), smaller. The base is taken the second way and every later reading the first,
 * so a delay can only make a suspend count more (bounds err early), never less: a base read with
 * `mono` first under load once counted a 5 s suspend as 4.95 s.
 */
function bootLead(mono?: number): number | undefined {
  try {
    const up = bootClock!.uptime();
    const at = mono ?? performance.now();
    return Number.isFinite(up) && up > 0 ? up * 1_000 - at : undefined;
  } catch {
    return undefined;
  }
}

/**
 * How much of the wall clock's new lead a suspend explains: on Linux no more than the boot clock
 * gained over the monotonic one meanwhile, so a wall clock stepped forward (NTP at boot, a test's
 * fake `Date`) is not one; where the boot clock cannot tell, all of it (the bound errs early).
 */
function suspendIn(gained: number, mono: number): number {
  if (bootBase === undefined) return gained;
  const boot = bootLead(mono);
  if (boot === undefined) return gained;
  const bootGained = boot - bootBase;
  if (bootGained <= SUSPEND_STEP_MS) return 0;
  const counted = Math.min(gained, bootGained);
  bootBase += counted;
  return counted;
}

/**
 * Milliseconds on the clock every lease bound and lease deadline is read on (when a confirm's
 * retry or a store's second command may still go out, when a leased handler's or a store call's
 * deadline has passed): monotonic, and, unlike `performance.now()` alone, counting the time the
 * host was suspended. Node's monotonic clock (CLOCK_MONOTONIC on Linux) stops while a host sleeps,
 * and the store's clock, on another host, does not: read on it alone, a lease would seem live after
 * it had run out. The wall clock is stepped forward on resume: when it has pulled ahead of the
 * monotonic one, the lead counts, as far as the boot clock confirms it on Linux (elsewhere in
 * full, so bounds err early, the safe side). A wall clock set back is ignored (the reading never
 * goes back). Costs two clock reads; the boot clock (a file read) only when the wall clock leapt.
 */
export function leaseNow(): number {
  const mono = performance.now();
  const ahead = Date.now() - mono;
  const gained = ahead - lead;
  if (gained > SUSPEND_STEP_MS) {
    lead = ahead;
    suspended += suspendIn(gained, mono);
  } else if (gained < 0) lead = ahead;
  return mono + suspended;
}

/**
 * How long before the lease's end the last confirm retry may still be sent (by the engine, or a
 * store's own second command): room for the call to reach the store and for the two clocks' rates
 * to differ. A tenth of the lease, within 100 ms–1 s.
 */
export function confirmMarginMs(leaseMs: number): number {
  return Math.min(1_000, Math.max(100, Math.floor(leaseMs / 10)));
}

/**
 * The deadline for a call of `method` on `store`: `storeTimeoutMs`, or none (`Infinity`) for a
 * store marked by {@link markSettlesInline} whose `method` is still its own (a test that swaps one
 * in for a hanging stub gets the deadline back, from that call on).
 */
export function callDeadlineMs(
  store: LeaseMethods,
  method: keyof LeaseMethods,
  storeTimeoutMs: number,
): number {
  try {
    const own = (store as { [INLINE]?: LeaseMethods })[INLINE];
    return typeof own === 'object' && own !== null && store[method] === own[method]
      ? Number.POSITIVE_INFINITY
      : storeTimeoutMs;
  } catch {
    // A wrapper whose reads throw: its calls get the deadline.
    return storeTimeoutMs;
  }
}

/**
 * Runs one store call under its deadline: past `ms` the returned promise rejects with a
 * {@link StoreTimeoutError} (a store error), whatever the call does afterwards. A call that throws
 * synchronously rejects the same way as one that fails. `Infinity` sets no deadline.
 */
export function withDeadline<T>(operation: string, ms: number, call: () => PromiseLike<T>): Promise<T> {
  let pending: PromiseLike<T>;
  try {
    pending = call();
  } catch (error) {
    return Promise.reject(error);
  }
  if (ms === Number.POSITIVE_INFINITY) return Promise.resolve(pending);
  return new Promise<T>((resolve, reject) => {
    const tick = wheel.add(ms, () => reject(new StoreTimeoutError(operation, ms)), true);
    pending.then(
      (value) => {
        wheel.cancel(tick);
        resolve(value);
      },
      (error: unknown) => {
        wheel.cancel(tick);
        reject(error);
      },
    );
  });
}
