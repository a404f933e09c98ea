/** The deadline and lease defaults shared by `once()` and the receiver. */
import { type Duration, parsePositiveDuration } from './duration.js';

/** The default deadline of one run. */
export const DEFAULT_TIMEOUT = '30s';

/** Durations resolved to ms; the lease defaults to 4 x the deadline. */
export function resolveTimings(options: { timeout?: Duration; lease?: Duration; retention?: Duration }) {
  const timeoutMs = parsePositiveDuration(options.timeout ?? DEFAULT_TIMEOUT, 'timeout');
  const leaseMs = options.lease === undefined ? 4 * timeoutMs : parsePositiveDuration(options.lease, 'lease');
  const retentionMs =
    options.retention === undefined ? undefined : parsePositiveDuration(options.retention, 'retention');
  return { timeoutMs, leaseMs, retentionMs };
}
