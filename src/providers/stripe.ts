import { ConfigError, VerificationError } from '../errors.js';
import type { Duration } from '../lease/duration.js';
import {
  asBuffer,
  checkTolerance,
  type EventMapOfUnion,
  hmacEach,
  keyValuePairs,
  offeredSignatures,
  parseJsonObject,
  parseTimestamp,
  refuseLookalikes,
  requireHeader,
  requireId,
  requireMatch,
  retentionMs,
  type SecretInput,
  secretKeys,
  stringField,
  toleranceMs,
} from './shared.js';
import type { DeliveryInput, Provider, Verified } from './types.js';

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

const HEADER = 'stripe-signature';

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
): Provider<E, EventMapOfUnion<E>> {
  const keys = secretKeys('stripe', options.secret, (s) => {
    refuseLookalikes(
      'stripe',
      s,
      [
        ['sk_', 'a secret API key'],
        ['rk_', 'a restricted API key'],
        ['pk_', 'a publishable API key'],
      ],
      "the endpoint's signing secret (whsec_...) from Developers → Webhooks",
    );
    if (!/^whsec_[A-Za-z0-9]+$/.test(s)) {
      throw new ConfigError(
        'invalid_secret',
        "onceonly: the stripe secret must look like 'whsec_...' (the endpoint's signing secret from Developers → Webhooks, or the one `stripe listen` prints)",
      );
    }
    return Buffer.from(s, 'utf8');
  });
  const tolerance = toleranceMs(options.tolerance);
  const retention = retentionMs(options.retention, '4d');

  return {
    name: 'stripe',
    retentionMs: retention,
    verify({ rawBody, headers, receivedAt }: DeliveryInput): Verified<E> {
      const value = requireHeader(headers, HEADER);
      let timestamp: string | undefined;
      const offered: string[] = [];
      for (const [k, v] of keyValuePairs(value, ',')) {
        if (k === 't') {
          if (timestamp !== undefined) {
            throw new VerificationError(
              'malformed_header',
              'onceonly: the stripe-signature header has more than one t= timestamp',
            );
          }
          timestamp = v;
        } else if (k === 'v1') offered.push(v);
      }
      if (timestamp === undefined) {
        throw new VerificationError(
          'malformed_header',
          'onceonly: the stripe-signature header has no t= timestamp',
        );
      }
      const candidates = offeredSignatures(`${HEADER} v1=`, offered, 'hex');
      checkTolerance(parseTimestamp(`${HEADER} t=`, timestamp), receivedAt, tolerance);
      const body = asBuffer(rawBody);
      requireMatch('stripe', hmacEach('sha256', keys, [timestamp, '.', body]), candidates);

      const event = parseJsonObject(body);
      const id = requireId('stripe', stringField(event, 'id'), 'id');
      return { event: event as unknown as E, type: stringField(event, 'type'), id, dedup: 'id' };
    },
  };
}
