import type { Duration } from '../lease/duration.js';
import {
  asBuffer,
  header,
  hmacEach,
  offeredSignatures,
  parseJsonObject,
  refusingLookalikes,
  requireHeader,
  requireMatch,
  retentionMs,
  type SecretInput,
  secretKeys,
  stringField,
} from './shared.js';
import type { AuthenticatingProvider, DeliveryInput, Verified } from './types.js';

/** A Lemon Squeezy webhook payload: `meta` (with `event_name`) and `data`. */
export interface LemonSqueezyEvent {
  meta: { event_name: string; custom_data?: Record<string, unknown>; [field: string]: unknown };
  data: Record<string, unknown>;
  [field: string]: unknown;
}

export interface LemonSqueezyOptions {
  /**
   * The signing secret you typed when creating the webhook; an array while rotating.
   * @example process.env.LEMONSQUEEZY_WEBHOOK_SECRET!
   */
  secret: SecretInput;
  /**
   * How long a completed delivery's digest is remembered. Lemon Squeezy retries 3 times within a few
   * minutes; a captured request verifies forever (no timestamp), so this is also the replay window.
   * @default '1d'
   * @example '7d'
   */
  retention?: Duration;
}

const HEADER = 'x-signature';

/**
 * Lemon Squeezy: `X-Signature: <hex>` over the body, HMAC-SHA256. The type is the signed
 * `meta.event_name` (the `X-Event-Name` header when absent); there is no event id, so dedup keys
 * on a digest of the body.
 *
 * @example
 * createReceiver({ provider: lemonSqueezy({ secret: process.env.LEMONSQUEEZY_WEBHOOK_SECRET! }), store, handler });
 */
export function lemonSqueezy<E = LemonSqueezyEvent>(options: LemonSqueezyOptions): AuthenticatingProvider<E> {
  const keys = secretKeys(
    'lemonSqueezy',
    options.secret,
    refusingLookalikes(
      'lemonSqueezy',
      [['eyJ', 'an API key (a JWT)']],
      'the signing secret you entered for the webhook (Settings → Webhooks)',
    ),
  );
  const retention = retentionMs(options.retention, '1d');

  /** The signature check, shared by `authenticate` and `verify`. */
  function authenticate({ rawBody, headers }: DeliveryInput): void {
    const candidates = offeredSignatures(HEADER, [requireHeader(headers, HEADER)], 'hex');
    requireMatch('lemonSqueezy', hmacEach('sha256', keys, [asBuffer(rawBody)]), candidates);
  }

  return {
    name: 'lemonsqueezy',
    retentionMs: retention,
    authenticate,
    verify(input: DeliveryInput): Verified<E> {
      authenticate(input);
      const event = parseJsonObject(input.rawBody);
      const type = stringField(event.meta, 'event_name') ?? header(input.headers, 'x-event-name');
      return { event: event as E, type, dedup: 'body' };
    },
  };
}
