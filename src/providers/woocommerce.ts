import type { Duration } from '../core/duration.js';
import { bodyHmac } from './families/bodyHmac.js';
import { bodyIncludes } from './families/define.js';
import { asBuffer, header, type SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/** A WooCommerce webhook payload: the resource (order, product...) as the REST API shows it. */
export type WoocommerceEvent = Record<string, unknown>;

export interface WoocommerceOptions {
  /**
   * The webhook's secret (WooCommerce → Settings → Advanced → Webhooks); an array while rotating.
   * @example process.env.WOOCOMMERCE_WEBHOOK_SECRET!
   */
  secret: SecretInput;
  /**
   * How long a completed delivery's digest is remembered. WooCommerce does not retry (it disables
   * a webhook after repeated failures); a captured request verifies forever (no timestamp), so this
   * is the replay window. 1 day.
   * @default '1d'
   */
  retention?: Duration;
}

const PING = /^webhook_id=[0-9]{1,20}$/;

const declaration = bodyHmac({
  name: 'woocommerce',
  retention: '1d',
  secret: {
    lookalikes: [
      ['ck_', 'a REST API consumer key'],
      ['cs_', 'a REST API consumer secret'],
    ],
    expected: "the webhook's secret (WooCommerce → Settings → Advanced → Webhooks)",
  },
  signature: { header: 'x-wc-webhook-signature', encoding: 'base64' },
  event: {
    id: { header: 'x-wc-webhook-delivery-id', signed: false },
    type: { header: 'x-wc-webhook-topic' },
    typeSigned: false,
  },
  // Saving a webhook sends an unsigned form POST `webhook_id=<n>` and refuses to activate the
  // webhook unless it is answered 2xx. It carries nothing: answered 200, never stored or handled.
  handshake: (request) => {
    if (request.method !== 'POST' || header(request.headers, 'x-wc-webhook-signature') !== undefined)
      return undefined;
    if (!bodyIncludes(request.rawBody, 'webhook_id=')) return undefined;
    return PING.test(asBuffer(request.rawBody).toString('latin1').trim()) ? { status: 200 } : undefined;
  },
});

/**
 * WooCommerce: `X-WC-Webhook-Signature: <base64>` over the body, HMAC-SHA256. `X-WC-Webhook-Topic`
 * (`order.created`) is the type and `X-WC-Webhook-Delivery-ID` the id, both unsigned, so dedup keys
 * on a digest of the body. The unsigned `webhook_id=<n>` ping sent when a webhook is saved is
 * answered 200 as a handshake.
 *
 * @example
 * createReceiver({ provider: woocommerce({ secret: process.env.WOOCOMMERCE_WEBHOOK_SECRET! }), store, on: { 'order.created': fulfil } });
 */
export function woocommerce<E = WoocommerceEvent>(options: WoocommerceOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}
