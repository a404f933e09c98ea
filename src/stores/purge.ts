/** Housekeeping shared by the SQL stores: what `purgeExpired()` deletes, and in what batches. */
import { ConfigError } from '../errors.js';

export interface PurgeOptions {
  /**
   * A lease that ran out and nobody took over is kept this long past its expiry, so that a takeover
   * still raises the attempt (the fencing number must never go back while a stale worker might still
   * write). Completed keys are deleted as soon as their retention ends.
   * @default 86_400_000 (one day)
   * @example store.purgeExpired({ leaseGraceMs: 3_600_000 })
   */
  leaseGraceMs?: number;
  /**
   * Also forget ordering-guard versions not advanced for this long. By default versions are kept.
   * @default undefined
   * @example store.purgeExpired({ versionsUnusedForMs: 30 * 86_400_000 })
   */
  versionsUnusedForMs?: number;
  /**
   * Rows deleted per statement; the purge repeats until a batch comes back short, so no statement
   * holds many row locks (or SQLite's write lock) for long.
   * @default 1_000
   * @example store.purgeExpired({ batchSize: 10_000 })
   */
  batchSize?: number;
}

/** The purge options with their defaults, checked once. */
export function purgeSettings(options: PurgeOptions = {}): {
  graceMs: number;
  batch: number;
  unusedMs: number | undefined;
} {
  const graceMs = options.leaseGraceMs ?? 86_400_000;
  const batch = options.batchSize ?? 1_000;
  const unusedMs = options.versionsUnusedForMs;
  if (
    !(graceMs >= 0) ||
    !Number.isInteger(batch) ||
    batch < 1 ||
    (unusedMs !== undefined && !(unusedMs >= 0))
  ) {
    throw new ConfigError(
      'invalid_option',
      'onceonly: purgeExpired needs leaseGraceMs >= 0, versionsUnusedForMs >= 0 and a positive integer batchSize',
    );
  }
  return { graceMs, batch, unusedMs };
}
