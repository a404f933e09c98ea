import { ConfigError } from '../errors.js';
import type { Duration } from '../lease/duration.js';
import {
  asBuffer,
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

/** A Square webhook: `merchant_id`, `type`, `event_id`, `created_at`, `data`. */
export interface SquareEvent {
  merchant_id?: string;
  type: string;
  event_id: string;
  created_at?: string;
  data: Record<string, unknown>;
  [field: string]: unknown;
}

export interface SquareOptions {
  /**
   * The subscription's signature key (Developer Console → Webhooks → Subscriptions); an array
   * while rotating.
   * @example process.env.SQUARE_SIGNATURE_KEY!
   */
  secret: SecretInput;
  /**
   * The notification URL exactly as entered in the Square subscription. Square signs it, and
   * behind a proxy or load balancer the URL the request arrives at often differs (scheme, host,
   * port). When unset, the delivery's `url` is used.
   * @default the delivery's url
   * @example 'https://example.com/webhooks/square'
   */
  notificationUrl?: string;
  /**
   * How long a completed event id is remembered. Square retries for up to 24 hours; a day of margin.
   * @default '2d'
   * @example '7d'
   */
  retention?: Duration;
}

const HEADER = 'x-square-hmacsha256-signature';

/**
 * Square: `x-square-hmacsha256-signature: <base64>` over notification URL + body, HMAC-SHA256 with
 * the signature key. Dedup keys on the signed `event_id`.
 *
 * @example
 * createReceiver({
 *   provider: square({ secret: process.env.SQUARE_SIGNATURE_KEY!, notificationUrl: 'https://example.com/webhooks/square' }),
 *   store,
 *   on: { 'payment.updated': handle },
 * });
 */
export function square<E = SquareEvent>(options: SquareOptions): AuthenticatingProvider<E> {
  const keys = secretKeys(
    'square',
    options.secret,
    refusingLookalikes(
      'square',
      [
        ['EAAA', 'an access token'],
        ['sq0atp-', 'an access token'],
        ['sq0csp-', 'the application secret'],
      ],
      "the subscription's signature key (Developer Dashboard → Webhooks → Subscriptions)",
    ),
  );
  const retention = retentionMs(options.retention, '2d');
  const configured = options.notificationUrl;
  if (configured !== undefined && (typeof configured !== 'string' || !/^https?:\/\//.test(configured))) {
    throw new ConfigError(
      'invalid_option',
      'onceonly: square notificationUrl must be the full http(s) URL entered in the Square subscription',
    );
  }

  /** The signature check over the notification URL and body, shared by `authenticate` and `verify`. */
  function authenticate({ rawBody, headers, url }: DeliveryInput): void {
    const candidates = offeredSignatures(HEADER, [requireHeader(headers, HEADER)], 'base64');
    const signedUrl = configured ?? url;
    if (signedUrl === undefined) {
      throw new ConfigError(
        'invalid_option',
        'onceonly: square signs the notification URL; set notificationUrl, or pass url to receive()',
      );
    }
    requireMatch('square', hmacEach('sha256', keys, [signedUrl, asBuffer(rawBody)]), candidates);
  }

  return {
    name: 'square',
    retentionMs: retention,
    authenticate,
    verify(input: DeliveryInput): Verified<E> {
      authenticate(input);
      const event = parseJsonObject(input.rawBody);
      const id = requireId('square', stringField(event, 'event_id'), 'event_id');
      return { event: event as E, type: stringField(event, 'type'), id, dedup: 'id' };
    },
  };
}
