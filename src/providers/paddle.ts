import { VerificationError } from '../errors.js';
import type { Duration } from '../lease/duration.js';
import {
  checkTolerance,
  keyValuePairs,
  offeredSignatures,
  parseJsonObject,
  parseTimestamp,
  refusingLookalikes,
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

/** A Paddle Billing notification: `event_id`, `event_type`, `occurred_at`, `notification_id`, `data`. */
export interface PaddleEvent {
  event_id: string;
  event_type: string;
  occurred_at: string;
  notification_id?: string;
  data: Record<string, unknown>;
  [field: string]: unknown;
}

export interface PaddleOptions {
  /**
   * The notification destination's secret key (`pdl_ntfset_...`, Developer Tools → Notifications);
   * an array while rotating (Paddle then sends one `h1=` per active key).
   * @example process.env.PADDLE_WEBHOOK_SECRET!
   */
  secret: SecretInput;
  /**
   * How far `ts=` may be from `receivedAt`, in both directions. Paddle's SDK uses 5 seconds; the
   * shared 5-minute default tolerates ordinary clock skew, and dedup on the signed `event_id`
   * catches replays inside it.
   * @default '5m'
   * @example '30s'
   */
  tolerance?: Duration;
  /**
   * How long a completed event id is remembered. Paddle retries for up to 3 days; one more day of margin.
   * @default '4d'
   * @example '30d'
   */
  retention?: Duration;
}

const HEADER = 'paddle-signature';

/**
 * Paddle Billing: `Paddle-Signature: ts=<ts>;h1=<hex>[;h1=<hex>]` over `ts + ':' + body`,
 * HMAC-SHA256 with the destination's secret key. Dedup keys on the signed `event_id`.
 * (Paddle Classic's RSA `p_signature` is a different scheme and is not supported.)
 *
 * @example
 * createReceiver({ provider: paddle({ secret: process.env.PADDLE_WEBHOOK_SECRET! }), store, on: { 'subscription.created': handle } });
 */
export function paddle<E = PaddleEvent>(options: PaddleOptions): AuthenticatingProvider<E> {
  const keys = secretKeys(
    'paddle',
    options.secret,
    refusingLookalikes(
      'paddle',
      [
        ['pdl_live_apikey_', 'a live API key'],
        ['pdl_sdbx_apikey_', 'a sandbox API key'],
      ],
      "the notification destination's secret key (pdl_ntfset_...)",
    ),
  );
  const tolerance = toleranceMs(options.tolerance);
  const retention = retentionMs(options.retention, '4d');

  /** The signature checks: header, tolerance, HMAC over `ts:body`. Shared by `authenticate` and `verify`. */
  function authenticate({ rawBody, headers, receivedAt }: DeliveryInput): void {
    let timestamp: string | undefined;
    const offered: string[] = [];
    for (const [k, v] of keyValuePairs(requireHeader(headers, HEADER), ';')) {
      if (k === 'ts') {
        // Two timestamps leave it open which one was signed: refuse, as for Stripe's t=.
        if (timestamp !== undefined) {
          throw new VerificationError(
            'malformed_header',
            'onceonly: the paddle-signature header has more than one ts= timestamp',
          );
        }
        timestamp = v;
      } else if (k === 'h1') offered.push(v);
    }
    if (timestamp === undefined) {
      throw new VerificationError('malformed_header', 'onceonly: the paddle-signature header has no ts=');
    }
    const candidates = offeredSignatures(`${HEADER} h1=`, offered, 'hex');
    checkTolerance(parseTimestamp(`${HEADER} ts=`, timestamp), receivedAt, tolerance);
    requireHmac('paddle', 'sha256', keys, `${timestamp}:`, rawBody, candidates);
  }

  return {
    name: 'paddle',
    retentionMs: retention,
    authenticate,
    verify(input: DeliveryInput): Verified<E> {
      authenticate(input);
      const event = parseJsonObject(input.rawBody);
      const id = requireId('paddle', stringField(event, 'event_id'), 'event_id');
      return { event: event as E, type: stringField(event, 'event_type'), id, dedup: 'id' };
    },
  };
}
