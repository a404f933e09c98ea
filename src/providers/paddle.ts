import type { Duration } from '../core/duration.js';
import { timestampedHmac } from './families/timestampedHmac.js';
import type { SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/** A Paddle Billing notification: `event_id`, `event_type`, `occurred_at`, `notification_id`, `data`. */
export interface PaddleEvent {
  event_id: string;
  event_type: string;
  occurred_at: string;
  notification_id?: string;
  data: Record<string, unknown>;
  [field: string]: unknown;
}

export interface PaddleOptions {
  /**
   * The notification destination's secret key (`pdl_ntfset_...`, Developer Tools → Notifications);
   * an array while rotating (Paddle then sends one `h1=` per active key).
   * @example process.env.PADDLE_WEBHOOK_SECRET!
   */
  secret: SecretInput;
  /**
   * How far `ts=` may be from `receivedAt`, in both directions. Paddle's SDK uses 5 seconds; the
   * shared 5-minute default tolerates ordinary clock skew, and dedup on the signed `event_id`
   * catches replays inside it.
   * @default '5m'
   * @example '30s'
   */
  tolerance?: Duration;
  /**
   * How long a completed event id is remembered. Paddle retries for up to 3 days; one more day of margin.
   * @default '4d'
   * @example '30d'
   */
  retention?: Duration;
}

const declaration = timestampedHmac({
  name: 'paddle',
  retention: '4d',
  secret: {
    lookalikes: [
      ['pdl_live_apikey_', 'a live API key'],
      ['pdl_sdbx_apikey_', 'a sandbox API key'],
    ],
    expected: "the notification destination's secret key (pdl_ntfset_...)",
  },
  signature: { header: 'paddle-signature', separator: ';', timestamp: 'ts', signature: 'h1' },
  signedPrefix: (t) => `${t}:`,
  event: { id: 'event_id', type: 'event_type', typeSigned: true },
});

/**
 * Paddle Billing: `Paddle-Signature: ts=<ts>;h1=<hex>[;h1=<hex>]` over `ts + ':' + body`,
 * HMAC-SHA256 with the destination's secret key. Dedup keys on the signed `event_id`.
 * (Paddle Classic's RSA `p_signature` is a different scheme and is not supported.)
 *
 * @example
 * createReceiver({ provider: paddle({ secret: process.env.PADDLE_WEBHOOK_SECRET! }), store, on: { 'subscription.created': handle } });
 */
export function paddle<E = PaddleEvent>(options: PaddleOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}
