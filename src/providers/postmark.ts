import type { Duration } from '../core/duration.js';
import { token } from './families/token.js';
import type { EventMapByField, SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/**
 * A Postmark webhook: `RecordType` (`Delivery`, `Bounce`, `Open`...) and the record's fields. For
 * the typed records, pass the `postmark` package's webhook models (see {@link postmark}).
 */
export interface PostmarkEvent {
  RecordType: string;
  MessageID?: string;
  [field: string]: unknown;
}

export interface PostmarkOptions {
  /**
   * The basic auth credentials set on the webhook, as `user:password`; an array while rotating.
   * @example process.env.POSTMARK_WEBHOOK_AUTH!
   */
  secret: SecretInput;
  /**
   * How long a completed delivery's digest is remembered. Postmark retries up to 10 times over
   * about 10 hours; credentials vouch for no body, so this is also the window a replay is caught in.
   * @default '1d'
   */
  retention?: Duration;
}

const declaration = token({
  name: 'postmark',
  retention: '1d',
  token: { basic: true },
  // Nothing signs the body: a digest of it is the key. RecordType routes, and is no more trusted
  // than the channel the credentials travel on.
  event: { type: 'RecordType', typeSigned: false },
});

/**
 * Postmark: HTTP basic auth, the credentials you put in the webhook URL (`https://user:pass@...`),
 * sent as `Authorization: Basic`, compared in constant time. They vouch for the sender, never for
 * the body: dedup keys on a digest of the body; the type is `RecordType`.
 *
 * @example
 * createReceiver({ provider: postmark({ secret: process.env.POSTMARK_WEBHOOK_AUTH! }), store, on: { Bounce: suppress } });
 *
 * Pass a union of the `postmark` package's webhook models (types only) for handlers narrowed by
 * `RecordType`:
 *
 * @example
 * import type { Models } from 'postmark';
 * type PostmarkWebhook = Models.BounceWebhook | Models.DeliveryWebhook | Models.OpenWebhook | Models.ClickWebhook
 *   | Models.SpamComplaintWebhook | Models.SubscriptionChangeWebhook;
 * createReceiver({
 *   provider: postmark<PostmarkWebhook>({ secret: process.env.POSTMARK_WEBHOOK_AUTH! }),
 *   store,
 *   on: { Bounce: ({ event }) => suppress(event.Email) },
 * });
 */
export function postmark<E = PostmarkEvent>(
  options: PostmarkOptions,
): AuthenticatingProvider<E, EventMapByField<E, 'RecordType'>> {
  return declaration(options) as AuthenticatingProvider<E, EventMapByField<E, 'RecordType'>>;
}
