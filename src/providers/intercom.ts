import type { Duration } from '../lease/duration.js';
import {
  asBuffer,
  digestWithout,
  hmacEach,
  offeredSignatures,
  parseJsonObject,
  refusingLookalikes,
  requireHeader,
  requireId,
  requireMatch,
  retentionMs,
  type SecretInput,
  secretKeys,
  stringField,
} from './shared.js';
import type { AuthenticatingProvider, DeliveryInput, Verified } from './types.js';

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

const HEADER = 'x-hub-signature';

/**
 * Intercom: `X-Hub-Signature: sha1=<hex>` over the body, HMAC-SHA1 with the app's client secret.
 * Dedup keys on the notification `id`, inside the signed body. The body's `delivery_attempts`
 * changes on every retry, so the content fingerprint leaves it (and `first_sent_at`) out.
 *
 * @example
 * createReceiver({ provider: intercom({ secret: process.env.INTERCOM_CLIENT_SECRET! }), store, on: { 'conversation.user.created': handle } });
 */
export function intercom<E = IntercomEvent>(options: IntercomOptions): AuthenticatingProvider<E> {
  const keys = secretKeys(
    'intercom',
    options.secret,
    refusingLookalikes(
      'intercom',
      [['dG9rO', 'an access token']],
      "the app's client secret (Developer Hub → your app → Basic information)",
    ),
  );
  const retention = retentionMs(options.retention, '3d');

  /** The signature check (HMAC-SHA1 over the body), shared by `authenticate` and `verify`. */
  function authenticate({ rawBody, headers }: DeliveryInput): void {
    const candidates = offeredSignatures(HEADER, [requireHeader(headers, HEADER)], 'hex', 'sha1=');
    requireMatch('intercom', hmacEach('sha1', keys, [asBuffer(rawBody)]), candidates);
  }

  return {
    name: 'intercom',
    retentionMs: retention,
    authenticate,
    verify(input: DeliveryInput): Verified<E> {
      authenticate(input);
      const event = parseJsonObject(input.rawBody);
      const id = requireId('intercom', stringField(event, 'id'), 'id');
      return {
        event: event as E,
        type: stringField(event, 'topic'),
        id,
        dedup: 'id',
        fingerprint: digestWithout(event, ['delivery_attempts', 'first_sent_at']),
      };
    },
  };
}
