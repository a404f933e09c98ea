import type { Duration } from '../core/duration.js';
import { timestampedHmac } from './families/timestampedHmac.js';
import type { EventMapOfUnion, SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/**
 * The shape every Stripe event has. For the full typed union, pass the `stripe` package's own
 * type: `stripe<Stripe.Event>({ secret })` (see {@link stripe}).
 */
export interface StripeEvent {
  id: string;
  object: string;
  type: string;
  created: number;
  livemode: boolean;
  api_version?: string | null;
  data: { object: Record<string, unknown>; previous_attributes?: Record<string, unknown> };
  [field: string]: unknown;
}

export interface StripeOptions {
  /**
   * The endpoint's signing secret exactly as the Dashboard or `stripe listen` shows it
   * (`whsec_...`); an array while rotating (any one may match).
   * @example process.env.STRIPE_WEBHOOK_SECRET!
   */
  secret: SecretInput;
  /**
   * How far the `t=` timestamp may be from `receivedAt`, in both directions.
   * @default '5m'
   * @example '10m'
   */
  tolerance?: Duration;
  /**
   * How long a completed event id is remembered. Stripe retries for up to 3 days; one more day
   * of margin.
   * @default '4d'
   * @example '30d'
   */
  retention?: Duration;
}

const declaration = timestampedHmac({
  name: 'stripe',
  retention: '4d',
  secret: {
    lookalikes: [
      ['sk_', 'a secret API key'],
      ['rk_', 'a restricted API key'],
      ['pk_', 'a publishable API key'],
    ],
    expected: "the endpoint's signing secret (whsec_...) from Developers → Webhooks",
    // stripe-node takes any string as the signing secret (its own tests sign with
    // 'whsec_test_secret'); only a bare prefix or whitespace inside is surely a paste mistake.
    refuse: (s) =>
      s === 'whsec_' || /\s/.test(s)
        ? "the stripe secret must be the endpoint's signing secret, 'whsec_...' (from Developers → Webhooks, or the one `stripe listen` prints)"
        : undefined,
  },
  // The whole `whsec_...` string is the key, not base64-decoded.
  signature: { header: 'stripe-signature', separator: ',', timestamp: 't', signature: 'v1' },
  signedPrefix: (t) => `${t}.`,
  event: { id: 'id', type: 'type', typeSigned: true },
});

/**
 * Stripe: `Stripe-Signature: t=<ts>,v1=<hex>[,v1=<hex>...]` over `t + '.' + body`, HMAC-SHA256
 * with the whole `whsec_...` string as the key. Dedup keys on the event's `id` (inside the signed
 * body, identical on every retry).
 *
 * Event types come from your own `stripe` package, so onceonly's types never require it:
 *
 * @example
 * import type Stripe from 'stripe';
 * const receiver = createReceiver({
 *   provider: stripe<Stripe.Event>({ secret: process.env.STRIPE_WEBHOOK_SECRET! }),
 *   store,
 *   on: { 'invoice.paid': ({ event }) => markPaid(event.data.object.id) },
 * });
 */
export function stripe<E extends { id: string; type: string } = StripeEvent>(
  options: StripeOptions,
): AuthenticatingProvider<E, EventMapOfUnion<E>> {
  return declaration(options) as AuthenticatingProvider<E, EventMapOfUnion<E>>;
}
