import { ConfigError, VerificationError } from '../errors.js';
import type { Duration } from '../lease/duration.js';
import {
  checkTolerance,
  decodeSignature,
  type EventMapOfUnion,
  parseJsonObject,
  parseTimestamp,
  refuseLookalikes,
  requireHeader,
  requireHmac,
  requireId,
  retentionMs,
  type SecretInput,
  secretKeys,
  stringField,
  toleranceMs,
} from './shared.js';
import type { AuthenticatingProvider, DeliveryInput, Verified } from './types.js';

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
): AuthenticatingProvider<E, EventMapOfUnion<E>> {
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

  /** The signature checks: header, tolerance, HMAC over `t.body`. Shared by `authenticate` and `verify`. */
  function authenticate({ rawBody, headers, receivedAt }: DeliveryInput): void {
    const value = requireHeader(headers, HEADER);
    let timestamp: string | undefined;
    const candidates: Buffer[] = [];
    // One pass over `t=..,v1=..,v1=..`: each v1 is decoded as it is found, so no list of pairs or
    // of strings is built on this hot path. Same rules as splitting at ',' then at the first '='.
    for (let from = 0; from <= value.length; ) {
      let end = value.indexOf(',', from);
      if (end === -1) end = value.length;
      const at = value.indexOf('=', from);
      if (at > from && at < end) {
        const k = value.slice(from, at).trim();
        if (k === 't') {
          if (timestamp !== undefined) {
            throw new VerificationError(
              'malformed_header',
              'onceonly: the stripe-signature header has more than one t= timestamp',
            );
          }
          timestamp = value.slice(at + 1, end).trim();
        } else if (k === 'v1') {
          const decoded = decodeSignature(value.slice(at + 1, end).trim(), 'hex');
          if (decoded) candidates.push(decoded);
        }
      }
      from = end + 1;
    }
    if (timestamp === undefined) {
      throw new VerificationError(
        'malformed_header',
        'onceonly: the stripe-signature header has no t= timestamp',
      );
    }
    if (candidates.length === 0) {
      throw new VerificationError(
        'malformed_header',
        `onceonly: the ${HEADER} v1= header holds no hex signature`,
      );
    }
    checkTolerance(parseTimestamp(`${HEADER} t=`, timestamp), receivedAt, tolerance);
    requireHmac('stripe', 'sha256', keys, `${timestamp}.`, rawBody, candidates);
  }

  return {
    name: 'stripe',
    retentionMs: retention,
    authenticate,
    verify(input: DeliveryInput): Verified<E> {
      authenticate(input);
      const event = parseJsonObject(input.rawBody);
      const id = requireId('stripe', stringField(event, 'id'), 'id');
      return { event: event as unknown as E, type: stringField(event, 'type'), id, dedup: 'id' };
    },
  };
}
