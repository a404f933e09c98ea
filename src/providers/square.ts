import type { Duration } from '../core/duration.js';
import { bodyHmac } from './families/bodyHmac.js';
import type { SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/** A Square webhook: `merchant_id`, `type`, `event_id`, `created_at`, `data`. */
export interface SquareEvent {
  merchant_id?: string;
  type: string;
  event_id: string;
  created_at?: string;
  data: Record<string, unknown>;
  [field: string]: unknown;
}

export interface SquareOptions {
  /**
   * The subscription's signature key (Developer Console → Webhooks → Subscriptions); an array
   * while rotating.
   * @example process.env.SQUARE_SIGNATURE_KEY!
   */
  secret: SecretInput;
  /**
   * The notification URL exactly as entered in the Square subscription. Square signs it, and
   * behind a proxy or load balancer the URL the request arrives at often differs (scheme, host,
   * port). When unset, the delivery's `url` is used.
   * @default the delivery's url
   * @example 'https://example.com/webhooks/square'
   */
  notificationUrl?: string;
  /**
   * How long a completed event id is remembered. Square retries for up to 24 hours; a day of margin.
   * @default '2d'
   * @example '7d'
   */
  retention?: Duration;
}

const declaration = bodyHmac({
  name: 'square',
  retention: '2d',
  secret: {
    lookalikes: [
      ['EAAA', 'an access token'],
      ['sq0atp-', 'an access token'],
      ['sq0csp-', 'the application secret'],
    ],
    expected: "the subscription's signature key (Developer Dashboard → Webhooks → Subscriptions)",
  },
  signature: { header: 'x-square-hmacsha256-signature', encoding: 'base64' },
  signsUrl: { option: 'notificationUrl', what: 'entered in the Square subscription' },
  event: { id: 'event_id', type: 'type', typeSigned: true },
});

/**
 * Square: `x-square-hmacsha256-signature: <base64>` over notification URL + body, HMAC-SHA256 with
 * the signature key. Dedup keys on the signed `event_id`.
 *
 * @example
 * createReceiver({
 *   provider: square({ secret: process.env.SQUARE_SIGNATURE_KEY!, notificationUrl: 'https://example.com/webhooks/square' }),
 *   store,
 *   on: { 'payment.updated': handle },
 * });
 */
export function square<E = SquareEvent>(options: SquareOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}
