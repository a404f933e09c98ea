import type { Duration } from '../core/duration.js';
import { timestampedHmac } from './families/timestampedHmac.js';
import type { SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/** A Calendly webhook: `event` (`invitee.created`...), `created_at`, `created_by`, `payload`. */
export interface CalendlyEvent {
  event: string;
  created_at?: string;
  created_by?: string;
  payload?: Record<string, unknown>;
  [field: string]: unknown;
}

export interface CalendlyOptions {
  /**
   * The webhook signing key (the `signing_key` given when creating the subscription, or the OAuth
   * app's key); an array while rotating.
   * @example process.env.CALENDLY_WEBHOOK_SIGNING_KEY!
   */
  secret: SecretInput;
  /**
   * How far the `t=` timestamp may be from `receivedAt`, in both directions. Calendly suggests 3
   * minutes; the shared 5-minute default tolerates ordinary clock skew.
   * @default '5m'
   */
  tolerance?: Duration;
  /**
   * How long a completed delivery's digest is remembered. Calendly retries failed deliveries with
   * backoff for up to 24 hours; 2 days leaves a margin.
   * @default '2d'
   */
  retention?: Duration;
}

const declaration = timestampedHmac({
  name: 'calendly',
  retention: '2d',
  secret: {
    lookalikes: [['eyJ', 'a personal access token (a JWT)']],
    expected: 'the webhook signing key',
  },
  signature: { header: 'calendly-webhook-signature', separator: ',', timestamp: 't', signature: 'v1' },
  signedPrefix: (t) => `${t}.`,
  // No event id: dedup keys on a digest of the signed body.
  event: { type: 'event', typeSigned: true },
});

/**
 * Calendly: `Calendly-Webhook-Signature: t=<ts>,v1=<hex>` over `t.body`, HMAC-SHA256 with the
 * webhook signing key. The type is the signed `event`; there is no event id, so dedup keys on a
 * digest of the body, and the tolerance refuses late replays.
 *
 * @example
 * createReceiver({ provider: calendly({ secret: process.env.CALENDLY_WEBHOOK_SIGNING_KEY! }), store, on: { 'invitee.created': book } });
 */
export function calendly<E = CalendlyEvent>(options: CalendlyOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}
