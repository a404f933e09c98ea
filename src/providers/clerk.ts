import { type StandardWebhooksSenderOptions, standardWebhooksFamily } from './families/standardWebhooks.js';
import type { StandardWebhooksEvent, StandardWebhooksEventMap } from './standardWebhooks.js';
import type { AuthenticatingProvider } from './types.js';

/** A Clerk webhook: `{ type, object: 'event', data, timestamp, instance_id }`. */
export type ClerkEvent = StandardWebhooksEvent;

/** `secret`: the endpoint's signing secret (`whsec_...`, Webhooks → Endpoint). Retention default 2 days. */
export type ClerkOptions = StandardWebhooksSenderOptions;

const declaration = standardWebhooksFamily({
  name: 'clerk',
  // Clerk delivers through Svix: retries over about 28 hours (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h).
  retention: '2d',
  headers: ['svix', 'webhook'],
  secret: {
    lookalikes: [
      ['sk_live_', 'a Clerk secret key'],
      ['sk_test_', 'a Clerk secret key'],
      ['pk_live_', 'a Clerk publishable key'],
      ['pk_test_', 'a Clerk publishable key'],
    ],
    expected: "the endpoint's signing secret (whsec_...) from Webhooks → your endpoint",
  },
});

/**
 * Clerk (through Svix): `svix-signature: v1,<base64>` over `svix-id.svix-timestamp.body`,
 * HMAC-SHA256 with the base64-decoded `whsec_` secret. Dedup keys on the signed `svix-id`.
 *
 * @example
 * import type { WebhookEvent } from '@clerk/backend';
 * createReceiver({
 *   provider: clerk<WebhookEvent>({ secret: process.env.CLERK_WEBHOOK_SECRET! }),
 *   store,
 *   on: { 'user.created': ({ event }) => createUser(event.data.id) },
 * });
 */
export function clerk<E = ClerkEvent>(
  options: ClerkOptions,
): AuthenticatingProvider<E, StandardWebhooksEventMap<E>> {
  return declaration(options) as AuthenticatingProvider<E, StandardWebhooksEventMap<E>>;
}
