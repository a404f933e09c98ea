/**
 * Health of a store, for readiness probes: reachable and how fast, its clock against the host's,
 * and what the store itself knows to check (Redis `maxmemory-policy`, the SQL stores' tables). One
 * mechanism for every store: a store that knows more offers `health()` (its clock and its checks),
 * any other store is probed with one `inspect`.
 */
import { causeOf } from './logger.js';
import { storeKind } from './telemetry.js';
import { withDeadline } from './timers.js';
import type { Store } from './types.js';

/** One thing checked. */
export interface HealthCheck {
  /** `reachable`, `clock`, `tables`, `maxmemory-policy`. */
  readonly name: string;
  readonly ok: boolean;
  /** What was found, in a short line (never a secret). */
  readonly detail?: string | undefined;
}

/** What a store can say about itself in one round trip (offered by the built-in stores). */
export interface StoreHealth {
  /** The store's clock when it answered; `undefined` when it has none of its own (memory, SQLite). */
  readonly now?: Date | undefined;
  /** The store's own checks (`tables`, `maxmemory-policy`). */
  readonly checks: readonly HealthCheck[];
}

/** What the caller uses of the store, so that its health covers it (the inbox's table). */
export interface HealthScope {
  /** A receiver in inbox mode: the inbox's own table (SQL stores) is checked too. */
  readonly inbox?: boolean | undefined;
}

/** A store that reports its own health. */
export interface HealthAware {
  health(scope?: HealthScope): Promise<StoreHealth>;
}

export interface HealthOptions {
  /** The longest wait for the store, in ms; past it the store is reported unreachable. */
  readonly timeoutMs: number;
  /** The largest difference between the store's clock and the host's still reported healthy, in ms. */
  readonly maxClockSkewMs: number;
  /** Whether the caller uses the store's inbox (its table is then checked where the store has one). */
  readonly inbox?: boolean | undefined;
}

/** The health of a store: `ok` when every check is. */
export interface HealthReport {
  readonly ok: boolean;
  /** The store's kind: `memory`, `redis`, `postgres`, `mysql`, `sqlite`, `custom`. */
  readonly store: string;
  /** Round trip of the probe in ms (undefined when it got no answer). */
  readonly latencyMs: number | undefined;
  /** The store's clock minus the host's, in ms, where the store has a clock of its own. */
  readonly clockSkewMs: number | undefined;
  /** `reachable`, then `clock` where known, then the store's own checks. */
  readonly checks: readonly HealthCheck[];
  readonly checkedAt: Date;
}

function isHealthAware(store: Store): store is Store & HealthAware {
  return typeof (store as Partial<HealthAware>).health === 'function';
}

/** Checks a store once, within `timeoutMs`; never throws. */
export async function checkHealth(store: Store, options: HealthOptions): Promise<HealthReport> {
  const checkedAt = new Date();
  const kind = storeKind(store);
  const sentAt = Date.now();
  const began = performance.now();
  let facts: StoreHealth;
  try {
    facts = await withDeadline('health', options.timeoutMs, () =>
      isHealthAware(store)
        ? store.health({ inbox: options.inbox === true })
        : store.inspect('onceonly:~health').then(() => ({ checks: [] }) as StoreHealth),
    );
  } catch (error) {
    return {
      ok: false,
      store: kind,
      latencyMs: undefined,
      clockSkewMs: undefined,
      checks: [{ name: 'reachable', ok: false, detail: causeOf(error) }],
      checkedAt,
    };
  }
  const latencyMs = performance.now() - began;
  const checks: HealthCheck[] = [
    { name: 'reachable', ok: true, detail: `answered in ${latencyMs.toFixed(1)} ms` },
  ];
  let clockSkewMs: number | undefined;
  if (facts.now !== undefined) {
    // The store read its clock somewhere within the round trip: compare with its middle, and
    // count the half round trip as uncertainty in the store's favour.
    clockSkewMs = facts.now.getTime() - (sentAt + latencyMs / 2);
    const beyond = Math.abs(clockSkewMs) - latencyMs / 2;
    checks.push({
      name: 'clock',
      ok: beyond <= options.maxClockSkewMs,
      detail: `store clock ${clockSkewMs >= 0 ? 'ahead of' : 'behind'} the host's by ${Math.abs(clockSkewMs).toFixed(0)} ms (limit ${options.maxClockSkewMs} ms)`,
    });
  }
  checks.push(...facts.checks);
  return { ok: checks.every((c) => c.ok), store: kind, latencyMs, clockSkewMs, checks, checkedAt };
}
