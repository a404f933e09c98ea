import { type StandardWebhooksSenderOptions, standardWebhooksFamily } from './families/standardWebhooks.js';
import type { StandardWebhooksEvent, StandardWebhooksEventMap } from './standardWebhooks.js';
import type { AuthenticatingProvider } from './types.js';

/** A Resend webhook: `{ type: 'email.delivered', created_at, data }`. */
export type ResendEvent = StandardWebhooksEvent;

/** `secret`: the webhook's signing secret (`whsec_...`, Webhooks → your endpoint). Retention default 2 days. */
export type ResendOptions = StandardWebhooksSenderOptions;

const declaration = standardWebhooksFamily({
  name: 'resend',
  // Resend delivers through Svix: retries over about 28 hours.
  retention: '2d',
  headers: ['svix', 'webhook'],
  secret: {
    lookalikes: [['re_', 'a Resend API key']],
    expected: "the webhook's signing secret (whsec_...) from Webhooks → your endpoint",
  },
});

/**
 * Resend (through Svix): `svix-signature: v1,<base64>` over `svix-id.svix-timestamp.body`,
 * HMAC-SHA256 with the base64-decoded `whsec_` secret. Dedup keys on the signed `svix-id`.
 *
 * @example
 * createReceiver({ provider: resend({ secret: process.env.RESEND_WEBHOOK_SECRET! }), store, on: { 'email.bounced': handleBounce } });
 */
export function resend<E = ResendEvent>(
  options: ResendOptions,
): AuthenticatingProvider<E, StandardWebhooksEventMap<E>> {
  return declaration(options) as AuthenticatingProvider<E, StandardWebhooksEventMap<E>>;
}
