import { type StandardWebhooksSenderOptions, standardWebhooksFamily } from './families/standardWebhooks.js';
import type { StandardWebhooksEvent, StandardWebhooksEventMap } from './standardWebhooks.js';
import type { AuthenticatingProvider } from './types.js';

/** A Liveblocks webhook: `{ type: 'storageUpdated', data }`. */
export type LiveblocksEvent = StandardWebhooksEvent;

/** `secret`: the endpoint's signing secret (`whsec_...`, project → Webhooks). Retention default 2 days. */
export type LiveblocksOptions = StandardWebhooksSenderOptions;

const declaration = standardWebhooksFamily({
  name: 'liveblocks',
  // Liveblocks delivers through Svix: retries over about 28 hours.
  retention: '2d',
  headers: ['webhook', 'svix'],
  secret: {
    lookalikes: [
      ['sk_', 'a Liveblocks secret key'],
      ['pk_', 'a Liveblocks public key'],
    ],
    expected: "the endpoint's signing secret (whsec_...) from the project's Webhooks page",
  },
});

/**
 * Liveblocks: `webhook-signature: v1,<base64>` over `webhook-id.webhook-timestamp.body`,
 * HMAC-SHA256 with the base64-decoded `whsec_` secret. Dedup keys on the signed `webhook-id`.
 *
 * @example
 * import type { WebhookEvent } from '@liveblocks/node';
 * createReceiver({ provider: liveblocks<WebhookEvent>({ secret: process.env.LIVEBLOCKS_WEBHOOK_SECRET! }), store, handler });
 */
export function liveblocks<E = LiveblocksEvent>(
  options: LiveblocksOptions,
): AuthenticatingProvider<E, StandardWebhooksEventMap<E>> {
  return declaration(options) as AuthenticatingProvider<E, StandardWebhooksEventMap<E>>;
}
