import type { Duration } from '../core/duration.js';
import { bodyHmac } from './families/bodyHmac.js';
import type { SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/** An Intercom notification: `id` (`notif_...`), `topic`, `data.item`. */
export interface IntercomEvent {
  type: 'notification_event';
  id: string;
  topic: string;
  app_id?: string;
  data: { item: Record<string, unknown>; [field: string]: unknown };
  delivery_attempts?: number;
  first_sent_at?: number;
  created_at?: number;
  [field: string]: unknown;
}

export interface IntercomOptions {
  /**
   * The app's client secret (Developer Hub → your app → Basic information); an array while rotating.
   * @example process.env.INTERCOM_CLIENT_SECRET!
   */
  secret: SecretInput;
  /**
   * How long a completed notification id is remembered. Intercom's retry window is not documented
   * precisely, so the 3-day default for unknown windows applies.
   * @default '3d'
   * @example '7d'
   */
  retention?: Duration;
}

const declaration = bodyHmac({
  name: 'intercom',
  retention: '3d',
  secret: {
    lookalikes: [['dG9rO', 'an access token']],
    expected: "the app's client secret (Developer Hub → your app → Basic information)",
  },
  algorithm: 'sha1',
  signature: { header: 'x-hub-signature', encoding: 'hex', prefix: 'sha1=' },
  event: {
    id: 'id',
    type: 'topic',
    typeSigned: true,
    // Rewritten by Intercom on every retry, so left out of the content fingerprint.
    perAttempt: ['delivery_attempts', 'first_sent_at'],
  },
});

/**
 * Intercom: `X-Hub-Signature: sha1=<hex>` over the body, HMAC-SHA1 with the app's client secret.
 * Dedup keys on the notification `id`, inside the signed body. The body's `delivery_attempts`
 * changes on every retry, so the content fingerprint leaves it (and `first_sent_at`) out.
 *
 * @example
 * createReceiver({ provider: intercom({ secret: process.env.INTERCOM_CLIENT_SECRET! }), store, on: { 'conversation.user.created': handle } });
 */
export function intercom<E = IntercomEvent>(options: IntercomOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}
