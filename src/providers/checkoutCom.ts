import { type BodyHmacSenderOptions, bodyHmacSenders } from './families/bodyHmacSenders.js';
import type { AuthenticatingProvider } from './types.js';

/** A Checkout.com webhook: `id` (`evt_...`), `type` (`payment_approved`...), `created_on`, `data`. */
export interface CheckoutComEvent {
  id: string;
  type: string;
  created_on?: string;
  data?: Record<string, unknown>;
  [field: string]: unknown;
}

/**
 * `secret`: the signature key of the workflow's webhook action; an array while rotating.
 * `retention` (default `'2d'`): how long a completed event id is remembered. Checkout.com resends
 * up to eight times over about 30 hours (5, 10, 15, 30 minutes, 1, 4, 12, 12 hours); 2 days leaves
 * a margin.
 */
export type CheckoutComOptions = BodyHmacSenderOptions;

/**
 * Checkout.com: `Cko-Signature: <hex>` over the body, HMAC-SHA256 with the webhook's signature key.
 * Dedup keys on the signed event `id`; the type is `type`.
 *
 * @example
 * createReceiver({ provider: checkoutCom({ secret: process.env.CHECKOUT_WEBHOOK_SIGNATURE_KEY! }), store, on: { payment_captured: fulfil } });
 */
export function checkoutCom<E = CheckoutComEvent>(options: CheckoutComOptions): AuthenticatingProvider<E> {
  return bodyHmacSenders.checkoutCom(options) as AuthenticatingProvider<E>;
}
