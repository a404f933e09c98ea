import type { Duration } from '../core/duration.js';
import { bodyHmac } from './families/bodyHmac.js';
import type { SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/** A Coinbase Commerce webhook: the delivery (`id`, `scheduled_for`, `attempt_number`) around its `event`. */
export interface CoinbaseCommerceEvent {
  id?: number | string;
  scheduled_for?: string;
  attempt_number?: number;
  event: { id: string; type: string; data?: Record<string, unknown>; [field: string]: unknown };
  [field: string]: unknown;
}

export interface CoinbaseCommerceOptions {
  /**
   * The webhook's shared secret (Settings → Webhook subscriptions → Show shared secret); an array
   * while rotating.
   * @example process.env.COINBASE_COMMERCE_WEBHOOK_SECRET!
   */
  secret: SecretInput;
  /**
   * How long a completed event id is remembered. Coinbase Commerce retries with backoff for up to
   * three days; one more day of margin.
   * @default '4d'
   */
  retention?: Duration;
}

const declaration = bodyHmac({
  name: 'coinbase-commerce',
  label: 'coinbaseCommerce',
  retention: '4d',
  secret: { expected: "the webhook subscription's shared secret (Settings → Webhook subscriptions)" },
  signature: { header: 'x-cc-webhook-signature', encoding: 'hex' },
  event: {
    id: ['event', 'id'],
    type: ['event', 'type'],
    typeSigned: true,
    // Stamped anew on every attempt, so left out of the content fingerprint.
    perAttempt: ['attempt_number', 'scheduled_for'],
  },
});

/**
 * Coinbase Commerce: `X-CC-Webhook-Signature: <hex>` over the body, HMAC-SHA256 with the shared
 * secret. Dedup keys on the signed `event.id`; the type is `event.type`. A retry's
 * `attempt_number` and `scheduled_for` are left out of the content fingerprint.
 *
 * @example
 * createReceiver({ provider: coinbaseCommerce({ secret: process.env.COINBASE_COMMERCE_WEBHOOK_SECRET! }), store, on: { 'charge:confirmed': fulfil } });
 */
export function coinbaseCommerce<E = CoinbaseCommerceEvent>(
  options: CoinbaseCommerceOptions,
): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}
