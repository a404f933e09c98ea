import type { Duration } from '../lease/duration.js';
import {
  asBuffer,
  header,
  hmacEach,
  offeredSignatures,
  parseJsonObject,
  refusingLookalikes,
  requireHeader,
  requireMatch,
  retentionMs,
  type SecretInput,
  secretKeys,
} from './shared.js';
import type { AuthenticatingProvider, DeliveryInput, Verified } from './types.js';

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

const HEADER = 'x-shopify-hmac-sha256';

/**
 * Shopify: `X-Shopify-Hmac-Sha256: <base64>` over the body, HMAC-SHA256 with the app's client
 * secret. `X-Shopify-Topic` gives the type and `X-Shopify-Event-Id` (or `X-Shopify-Webhook-Id`) the
 * id, but no header is signed, so dedup keys on a digest of the body.
 *
 * @example
 * createReceiver({ provider: shopify({ secret: process.env.SHOPIFY_API_SECRET! }), store, on: { 'orders/create': handleOrder } });
 */
export function shopify<E = ShopifyEvent>(options: ShopifyOptions): AuthenticatingProvider<E> {
  const keys = secretKeys(
    'shopify',
    options.secret,
    refusingLookalikes(
      'shopify',
      [
        ['shpat_', 'an Admin API access token'],
        ['shpca_', 'a custom app access token'],
        ['shppa_', 'a private app password'],
      ],
      "the app's client secret (API secret key)",
    ),
  );
  const retention = retentionMs(options.retention, '1d');

  /** The signature check, shared by `authenticate` and `verify`. */
  function authenticate({ rawBody, headers }: DeliveryInput): void {
    const candidates = offeredSignatures(HEADER, [requireHeader(headers, HEADER)], 'base64');
    requireMatch('shopify', hmacEach('sha256', keys, [asBuffer(rawBody)]), candidates);
  }

  return {
    name: 'shopify',
    retentionMs: retention,
    authenticate,
    verify(input: DeliveryInput): Verified<E> {
      authenticate(input);
      const { headers } = input;
      const event = parseJsonObject(input.rawBody);
      return {
        event: event as E,
        type: header(headers, 'x-shopify-topic'),
        id: header(headers, 'x-shopify-event-id') ?? header(headers, 'x-shopify-webhook-id'),
        dedup: 'body',
      };
    },
  };
}
