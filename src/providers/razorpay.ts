import { type BodyHmacSenderOptions, bodyHmacSenders } from './families/bodyHmacSenders.js';
import type { AuthenticatingProvider } from './types.js';

/** A Razorpay webhook: `event` (`payment.captured`...), `contains`, `payload`, `created_at`. */
export interface RazorpayEvent {
  entity: string;
  account_id?: string;
  event: string;
  contains?: string[];
  payload: Record<string, unknown>;
  created_at?: number;
  [field: string]: unknown;
}

/**
 * `secret`: the secret entered for the webhook (Dashboard → Webhooks); an array while rotating.
 * `retention` (default `'2d'`): how long a completed delivery's digest is remembered. Razorpay
 * retries with backoff for 24 hours; a captured request verifies forever (no timestamp), so this is
 * also the replay window.
 */
export type RazorpayOptions = BodyHmacSenderOptions;

/**
 * Razorpay: `X-Razorpay-Signature: <hex>` over the body, HMAC-SHA256. The type is the signed
 * `event`; `X-Razorpay-Event-Id` is unsigned, so dedup keys on a digest of the body.
 *
 * @example
 * createReceiver({ provider: razorpay({ secret: process.env.RAZORPAY_WEBHOOK_SECRET! }), store, on: { 'payment.captured': fulfil } });
 */
export function razorpay<E = RazorpayEvent>(options: RazorpayOptions): AuthenticatingProvider<E> {
  return bodyHmacSenders.razorpay(options) as AuthenticatingProvider<E>;
}
