import { ConfigError } from './errors.js';
import { type Duration, parseDuration } from './lease/duration.js';
import { type DegradedReason, runClaimed, type WorkContext } from './lease/engine.js';
import { resolveTimings } from './lease/timings.js';
import type { Store } from './lease/types.js';

export type { WorkContext } from './lease/engine.js';

export { DEFAULT_TIMEOUT, resolveTimings } from './lease/timings.js';
/** How long a completed key is remembered when nothing else is known: 3 days. */
export const DEFAULT_RETENTION = '3d';

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
export async function once<T>(
  store: Store,
  key: string,
  work: (ctx: WorkContext) => T | Promise<T>,
  options: OnceOptions = {},
): Promise<OnceResult<T>> {
  if (typeof key !== 'string' || key === '') {
    throw new ConfigError('invalid_key', 'onceonly: once() needs a non-empty string key');
  }
  const { timeoutMs, leaseMs, retentionMs } = resolveTimings(options);
  return runClaimed(store, key, work, {
    leaseMs,
    timeoutMs,
    retentionMs: retentionMs ?? parseDuration(DEFAULT_RETENTION),
    fingerprint: options.fingerprint,
  });
}
