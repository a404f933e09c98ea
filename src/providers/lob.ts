import type { Duration } from '../core/duration.js';
import { timestampedHmac } from './families/timestampedHmac.js';
import type { SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/** A Lob webhook: `id` (`evt_...`), `event_type.id` (`letter.delivered`...), `body` (the mail piece). */
export interface LobEvent {
  id: string;
  event_type: { id: string; [field: string]: unknown };
  body?: Record<string, unknown>;
  date_created?: string;
  [field: string]: unknown;
}

export interface LobOptions {
  /**
   * The webhook's secret (Dashboard → Webhooks → your webhook); an array while rotating.
   * @example process.env.LOB_WEBHOOK_SECRET!
   */
  secret: SecretInput;
  /**
   * How far `Lob-Signature-Timestamp` may be from `receivedAt`, in both directions.
   * @default '5m'
   */
  tolerance?: Duration;
  /**
   * How long a completed event id is remembered. Lob retries failed deliveries with backoff; its
   * window is not published, so the 3-day default for unknown windows applies.
   * @default '3d'
   */
  retention?: Duration;
}

const declaration = timestampedHmac({
  name: 'lob',
  retention: '3d',
  secret: {
    lookalikes: [
      ['live_pub_', 'a live publishable API key'],
      ['test_pub_', 'a test publishable API key'],
      ['live_', 'a live secret API key'],
      ['test_', 'a test secret API key'],
    ],
    expected: "the webhook's secret (Dashboard → Webhooks)",
  },
  signature: { header: 'lob-signature', encoding: 'hex' },
  timestamp: { header: 'lob-signature-timestamp', unit: 'ms' },
  signedPrefix: (t) => `${t}.`,
  event: { id: 'id', type: ['event_type', 'id'], typeSigned: true },
});

/**
 * Lob: `Lob-Signature: <hex>` over `timestamp.body`, HMAC-SHA256, with `Lob-Signature-Timestamp`
 * (ms) checked against the tolerance. Dedup keys on the signed event `id`; the type is
 * `event_type.id`.
 *
 * @example
 * createReceiver({ provider: lob({ secret: process.env.LOB_WEBHOOK_SECRET! }), store, on: { 'letter.delivered': track } });
 */
export function lob<E = LobEvent>(options: LobOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}
