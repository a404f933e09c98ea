import { type BodyHmacSenderOptions, bodyHmacSenders } from './families/bodyHmacSenders.js';
import type { AuthenticatingProvider } from './types.js';

/** A Cal.com webhook: `triggerEvent` (`BOOKING_CREATED`...), `createdAt` and the `payload`. */
export interface CalComEvent {
  triggerEvent: string;
  createdAt?: string;
  payload?: Record<string, unknown>;
  [field: string]: unknown;
}

/**
 * `secret`: the webhook's secret (Settings → Developer → Webhooks). Without one, Cal.com signs
 * nothing; an array while rotating. `retention` (default `'1d'`): how long a completed delivery's
 * digest is remembered. A captured request verifies forever (no timestamp), so this is also the
 * replay window. 1 day.
 */
export type CalComOptions = BodyHmacSenderOptions;

/**
 * Cal.com: `X-Cal-Signature-256: <hex>` over the body, HMAC-SHA256. The type is the signed
 * `triggerEvent`; there is no event id, so dedup keys on a digest of the body.
 *
 * @example
 * createReceiver({ provider: calCom({ secret: process.env.CALCOM_WEBHOOK_SECRET! }), store, on: { BOOKING_CREATED: book } });
 */
export function calCom<E = CalComEvent>(options: CalComOptions): AuthenticatingProvider<E> {
  return bodyHmacSenders.calCom(options) as AuthenticatingProvider<E>;
}
