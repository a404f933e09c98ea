import { type BodyHmacSenderOptions, bodyHmacSenders } from './families/bodyHmacSenders.js';
import type { AuthenticatingProvider } from './types.js';

/** A Typeform webhook: `event_id`, `event_type` (`form_response`) and the `form_response`. */
export interface TypeformEvent {
  event_id: string;
  event_type: string;
  form_response?: Record<string, unknown>;
  [field: string]: unknown;
}

/**
 * `secret`: the secret set on the webhook (Connect → Webhooks → Edit → Secret); an array while
 * rotating. `retention` (default `'2d'`): how long a completed event id is remembered. Typeform
 * retries failed deliveries with backoff over several hours; 2 days leaves a margin.
 */
export type TypeformOptions = BodyHmacSenderOptions;

/**
 * Typeform: `Typeform-Signature: sha256=<base64>` over the body, HMAC-SHA256. Dedup keys on the
 * signed `event_id`; the type is `event_type`.
 *
 * @example
 * createReceiver({ provider: typeform({ secret: process.env.TYPEFORM_WEBHOOK_SECRET! }), store, on: { form_response: saveAnswers } });
 */
export function typeform<E = TypeformEvent>(options: TypeformOptions): AuthenticatingProvider<E> {
  return bodyHmacSenders.typeform(options) as AuthenticatingProvider<E>;
}
