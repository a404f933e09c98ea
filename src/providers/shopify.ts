import type { Duration } from '../core/duration.js';
import { bodyHmac } from './families/bodyHmac.js';
import type { SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/** A Shopify webhook payload (its shape depends on the topic). */
export type ShopifyEvent = Record<string, unknown>;

export interface ShopifyOptions {
  /**
   * The app's client secret (Partner Dashboard → App setup), or, for webhooks created in the shop
   * admin, the key shown under Settings → Notifications → Webhooks; an array while rotating.
   * @example process.env.SHOPIFY_API_SECRET!
   */
  secret: SecretInput;
  /**
   * How long a completed delivery's digest is remembered. Shopify retries 8 times over 4 hours; a
   * captured request verifies forever (no timestamp), so this is also the replay window. 1 day.
   * @default '1d'
   * @example '7d'
   */
  retention?: Duration;
}

const declaration = bodyHmac({
  name: 'shopify',
  retention: '1d',
  secret: {
    lookalikes: [
      ['shpat_', 'an Admin API access token'],
      ['shpca_', 'a custom app access token'],
      ['shppa_', 'a private app password'],
    ],
    expected: "the app's client secret (API secret key)",
  },
  // Webhooks send X-Shopify-*; the newer Events deliveries the same headers without the X- prefix.
  signature: { header: 'x-shopify-hmac-sha256', alsoIn: ['shopify-hmac-sha256'], encoding: 'base64' },
  event: {
    id: {
      header: ['x-shopify-event-id', 'x-shopify-webhook-id', 'shopify-event-id', 'shopify-webhook-id'],
      signed: false,
    },
    // The topic is not signed: the receiver binds it into the fingerprint.
    type: { header: ['x-shopify-topic', 'shopify-topic'] },
    typeSigned: false,
  },
});

/**
 * Shopify: `X-Shopify-Hmac-Sha256: <base64>` over the body, HMAC-SHA256 with the app's client
 * secret. `X-Shopify-Topic` gives the type and `X-Shopify-Event-Id` (or `X-Shopify-Webhook-Id`) the
 * id, but no header is signed, so dedup keys on a digest of the body.
 *
 * @example
 * createReceiver({ provider: shopify({ secret: process.env.SHOPIFY_API_SECRET! }), store, on: { 'orders/create': handleOrder } });
 */
export function shopify<E = ShopifyEvent>(options: ShopifyOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}
