import type { Duration } from '../core/duration.js';
import { bodyHmac } from './families/bodyHmac.js';
import { fieldAt } from './families/define.js';
import { header, parseJsonObject, type SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

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

const declaration = bodyHmac({
  name: 'lemonsqueezy',
  label: 'lemonSqueezy',
  retention: '1d',
  secret: {
    lookalikes: [['eyJ', 'an API key (a JWT)']],
    expected: 'the signing secret you entered for the webhook (Settings → Webhooks)',
  },
  signature: { header: 'x-signature', encoding: 'hex' },
  // No event id: dedup keys on a digest of the signed body.
  describe: (input) => {
    const event = parseJsonObject(input.rawBody);
    const signedType = fieldAt(event, ['meta', 'event_name']);
    if (signedType !== undefined) return { event, type: signedType, typeSigned: true, dedup: 'body' };
    // The X-Event-Name fallback is not signed.
    return { event, type: header(input.headers, 'x-event-name'), typeSigned: false, dedup: 'body' };
  },
});

/**
 * Lemon Squeezy: `X-Signature: <hex>` over the body, HMAC-SHA256. The type is the signed
 * `meta.event_name` (the `X-Event-Name` header when absent); there is no event id, so dedup keys
 * on a digest of the body.
 *
 * @example
 * createReceiver({ provider: lemonSqueezy({ secret: process.env.LEMONSQUEEZY_WEBHOOK_SECRET! }), store, handler });
 */
export function lemonSqueezy<E = LemonSqueezyEvent>(options: LemonSqueezyOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}
