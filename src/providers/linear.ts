import { VerificationError } from '../errors.js';
import type { Duration } from '../lease/duration.js';
import {
  asBuffer,
  checkTolerance,
  digestWithout,
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
  toleranceMs,
} from './shared.js';
import type { AuthenticatingProvider, DeliveryInput, Verified } from './types.js';

/** A Linear webhook: `action`, `type` (`Issue`, `Comment`...), `data`, `webhookTimestamp` (ms). */
export interface LinearEvent {
  action: string;
  type: string;
  data: Record<string, unknown>;
  url?: string;
  createdAt?: string;
  organizationId?: string;
  webhookTimestamp: number;
  webhookId?: string;
  [field: string]: unknown;
}

export interface LinearOptions {
  /**
   * The webhook's signing secret (`lin_wh_...`, Settings → API → Webhooks); an array while rotating.
   * @example process.env.LINEAR_WEBHOOK_SECRET!
   */
  secret: SecretInput;
  /**
   * How far the body's `webhookTimestamp` may be from `receivedAt`, in both directions. Linear's
   * SDK uses one minute; the shared 5-minute default tolerates ordinary clock skew.
   * @default '5m'
   * @example '1m'
   */
  tolerance?: Duration;
  /**
   * How long a completed event's digest is remembered. Linear retries 3 times over about 7 hours
   * (1 minute, 1 hour, 6 hours); a day leaves a margin.
   * @default '1d'
   * @example '3d'
   */
  retention?: Duration;
}

// Written by Linear on every attempt, so left out of the dedup digest.
const PER_ATTEMPT = ['webhookTimestamp'];

/**
 * Linear: `Linear-Signature: <hex>` over the body, HMAC-SHA256; freshness comes from
 * `webhookTimestamp` (ms) inside the signed body. `Linear-Delivery` is unsigned, so dedup keys on
 * a digest of the signed body with `webhookTimestamp` left out (Linear stamps each attempt anew).
 *
 * @example
 * createReceiver({ provider: linear({ secret: process.env.LINEAR_WEBHOOK_SECRET! }), store, on: { Issue: handleIssue } });
 */
export function linear<E = LinearEvent>(options: LinearOptions): AuthenticatingProvider<E> {
  const keys = secretKeys(
    'linear',
    options.secret,
    refusingLookalikes(
      'linear',
      [['lin_api_', 'a Linear API key']],
      "the webhook's signing secret (lin_wh_...) from Settings → API → Webhooks",
    ),
  );
  const tolerance = toleranceMs(options.tolerance);
  const retention = retentionMs(options.retention, '1d');

  /**
   * The signature check, then the tolerance. Linear's timestamp is a field of the signed body, so
   * authenticating parses it; returns the parsed event for `verify`. Shared by both.
   */
  function authenticate({ rawBody, headers, receivedAt }: DeliveryInput): Record<string, unknown> {
    const candidates = offeredSignatures(
      'linear-signature',
      [requireHeader(headers, 'linear-signature')],
      'hex',
    );
    const body = asBuffer(rawBody);
    requireMatch('linear', hmacEach('sha256', keys, [body]), candidates);
    const event = parseJsonObject(body);
    const ts = event.webhookTimestamp;
    if (typeof ts !== 'number' || !Number.isSafeInteger(ts) || ts < 0) {
      throw new VerificationError(
        'invalid_body',
        'onceonly: the linear body has no numeric webhookTimestamp (milliseconds)',
      );
    }
    checkTolerance(ts, receivedAt, tolerance);
    return event;
  }

  return {
    name: 'linear',
    retentionMs: retention,
    authenticate(input: DeliveryInput): void {
      authenticate(input);
    },
    verify(input: DeliveryInput): Verified<E> {
      const event = authenticate(input);
      const { headers } = input;
      const digest = digestWithout(event, PER_ATTEMPT);
      return {
        event: event as E,
        type: stringField(event, 'type'),
        id: header(headers, 'linear-delivery'),
        // The digest is of signed material but not of the raw bytes, so it travels as the key.
        dedup: 'id',
        key: `body:${digest}`,
        fingerprint: digest,
      };
    },
  };
}
