import type { Duration } from '../core/duration.js';
import { standardWebhooksFamily } from './families/standardWebhooks.js';
import type { EventMapOfUnion, SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/** A Standard Webhooks payload: `type`, `timestamp` and `data` by convention. */
export interface StandardWebhooksEvent {
  type?: string;
  timestamp?: string;
  data?: unknown;
  [field: string]: unknown;
}

export interface StandardWebhooksOptions {
  /**
   * The signing secret as the sender's dashboard shows it: `whsec_` followed by base64 key bytes
   * (the prefix is optional); an array while rotating (any one may match).
   * @example process.env.SVIX_WEBHOOK_SECRET!
   */
  secret: SecretInput;
  /**
   * The first segment of every dedup key; name the sender so two senders never share keys.
   * @default 'standard-webhooks'
   * @example 'clerk'
   */
  name?: string;
  /**
   * How far `webhook-timestamp` may be from `receivedAt`, in both directions.
   * @default '5m'
   * @example '10m'
   */
  tolerance?: Duration;
  /**
   * How long a completed message id is remembered. Svix retries for about 28 hours and the spec's
   * example schedule runs about as long; senders may retry for up to 3 days, plus a day of margin.
   * @default '4d'
   * @example '7d'
   */
  retention?: Duration;
}

/**
 * The event map for typed `on` handlers: a union discriminated by a literal `type` (Clerk's
 * `WebhookEvent`, your own union) maps each name to its member; anything else maps any name to `E`.
 */
export type StandardWebhooksEventMap<E> = [E] extends [{ type: string }]
  ? string extends E['type']
    ? Record<string, E>
    : EventMapOfUnion<E>
  : Record<string, E>;

const declaration = standardWebhooksFamily({
  name: 'standard-webhooks',
  // The generic entry point: name the sender so two senders never share keys.
  renamable: true,
  retention: '4d',
  headers: ['webhook', 'svix'],
});

/**
 * Standard Webhooks (Svix, Resend, Clerk, and every sender following standardwebhooks.com):
 * `webhook-signature: v1,<base64> [v1,<base64> ...]` over `id.timestamp.body`, HMAC-SHA256 with the
 * base64-decoded `whsec_` secret. Accepts the `svix-id` / `svix-timestamp` / `svix-signature`
 * headers too. Dedup keys on the message id, which is signed and identical on every retry.
 *
 * @example
 * createReceiver({ provider: standardWebhooks({ secret: process.env.WEBHOOK_SECRET!, name: 'resend' }), store, handler });
 *
 * Pass the sender's event union for typed `on` handlers:
 *
 * @example
 * import type { WebhookEvent } from '@clerk/backend';
 * createReceiver({
 *   provider: standardWebhooks<WebhookEvent>({ secret: process.env.CLERK_WEBHOOK_SECRET!, name: 'clerk' }),
 *   store,
 *   on: { 'user.created': ({ event }) => createUser(event.data.id) },
 * });
 */
export function standardWebhooks<E = StandardWebhooksEvent>(
  options: StandardWebhooksOptions,
): AuthenticatingProvider<E, StandardWebhooksEventMap<E>> {
  return declaration(options) as AuthenticatingProvider<E, StandardWebhooksEventMap<E>>;
}
