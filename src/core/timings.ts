/** The deadline, lease and store-call defaults shared by `once()` and the receiver. */

import { type Duration, parsePositiveDuration } from './duration.js';
import { ConfigError } from './errors.js';

/** The default deadline of one run. */
export const DEFAULT_TIMEOUT = '30s';

/**
 * The default deadline of one store call: far above a healthy store's few milliseconds, and well
 * inside the shortest provider timeout (Shopify waits 5 s), so a frozen store answers 503 in time.
 */
export const DEFAULT_STORE_TIMEOUT = '3s';

/**
 * Durations resolved to ms; the lease defaults to 4 × the deadline, the store-call deadline to
 * 3 s (never more than half the lease unless set explicitly).
 */
export function resolveTimings(options: {
  timeout?: Duration | undefined;
  lease?: Duration | undefined;
  retention?: Duration | undefined;
  storeTimeout?: Duration | undefined;
}) {
  const timeoutMs = parsePositiveDuration(options.timeout ?? DEFAULT_TIMEOUT, 'timeout');
  const leaseMs = options.lease === undefined ? 4 * timeoutMs : parsePositiveDuration(options.lease, 'lease');
  const retentionMs =
    options.retention === undefined ? undefined : parsePositiveDuration(options.retention, 'retention');
  let storeTimeoutMs: number;
  if (options.storeTimeout === undefined) {
    storeTimeoutMs = Math.max(
      1,
      Math.min(parsePositiveDuration(DEFAULT_STORE_TIMEOUT, 'storeTimeout'), Math.floor(leaseMs / 2)),
    );
  } else {
    storeTimeoutMs = parsePositiveDuration(options.storeTimeout, 'storeTimeout');
    if (storeTimeoutMs >= leaseMs) {
      throw new ConfigError(
        'invalid_duration',
        `onceonly: storeTimeout (${storeTimeoutMs} ms) must be shorter than the lease (${leaseMs} ms): a store call that may take the whole lease cannot keep it`,
      );
    }
  }
  return { timeoutMs, leaseMs, retentionMs, storeTimeoutMs };
}
