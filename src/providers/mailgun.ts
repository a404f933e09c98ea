import { VerificationError } from '../errors.js';
import type { Duration } from '../lease/duration.js';
import {
  asBuffer,
  checkTolerance,
  hmacEach,
  isForm,
  offeredSignatures,
  parseForm,
  parseJsonObject,
  parseTimestamp,
  refusingLookalikes,
  requireMatch,
  retentionMs,
  type SecretInput,
  secretKeys,
  stringField,
  toleranceMs,
} from './shared.js';
import type { AuthenticatingProvider, DeliveryInput, Verified } from './types.js';

/**
 * A Mailgun webhook body. Only `signature.timestamp` and `signature.token` are signed:
 * `event-data` is NOT covered by the signature and must be treated as unauthenticated input.
 */
export interface MailgunEvent {
  signature: { timestamp: string; token: string; signature: string };
  'event-data': { id?: string; event?: string; [field: string]: unknown };
  [field: string]: unknown;
}

export interface MailgunOptions {
  /**
   * The HTTP webhook signing key (Sending → Webhooks → HTTP webhook signing key); an array while
   * rotating. Not the API key.
   * @example process.env.MAILGUN_WEBHOOK_SIGNING_KEY!
   */
  secret: SecretInput;
  /**
   * How far `signature.timestamp` may be from `receivedAt`, in both directions. Mailgun warns that
   * deliveries can be delayed and retries a POST for 8 hours, so the default covers that window;
   * replays inside it are still caught, because the signed token is the dedup key and is remembered
   * longer (`retention`) than it is accepted.
   * @default '12h'
   * @example '1h'
   */
  tolerance?: Duration;
  /**
   * How long a used token is remembered: longer than `tolerance`, so a token is never accepted
   * again once forgotten.
   * @default '1d'
   * @example '3d'
   */
  retention?: Duration;
}

/**
 * Mailgun: the signature travels inside the body (`signature.timestamp`, `.token`, `.signature`)
 * as hex HMAC-SHA256 of timestamp + token with the webhook signing key. That is all it signs: the
 * event data is unauthenticated. Dedup therefore keys on the signed token (Mailgun's own advice:
 * never honour a token twice); a captured signature replayed with other event data is then a
 * conflict, not a new event. JSON and legacy form-encoded bodies are accepted.
 *
 * @example
 * createReceiver({ provider: mailgun({ secret: process.env.MAILGUN_WEBHOOK_SIGNING_KEY! }), store, on: { delivered: markDelivered } });
 */
export function mailgun<E = MailgunEvent>(options: MailgunOptions): AuthenticatingProvider<E> {
  const keys = secretKeys(
    'mailgun',
    options.secret,
    refusingLookalikes(
      'mailgun',
      [['pubkey-', 'the public validation key']],
      'the HTTP webhook signing key (Sending → Webhooks)',
    ),
  );
  const tolerance = toleranceMs(options.tolerance ?? '12h');
  const retention = retentionMs(options.retention, '1d');

  /**
   * The signature checks. Mailgun's timestamp, token and signature are fields of the body, so
   * authenticating parses it; returns the parsed body and the signed token for `verify`. Shared by both.
   */
  function authenticate({ rawBody, headers, receivedAt }: DeliveryInput): {
    event: Record<string, unknown>;
    token: string;
  } {
    const body = asBuffer(rawBody);
    let event: Record<string, unknown>;
    let sig: unknown;
    if (isForm(headers)) {
      event = Object.fromEntries(parseForm(body));
      sig = event;
    } else {
      event = parseJsonObject(body);
      sig = event.signature;
    }
    const timestamp = stringField(sig, 'timestamp');
    const token = stringField(sig, 'token');
    const signature = stringField(sig, 'signature');
    if (timestamp === undefined || token === undefined || signature === undefined) {
      throw new VerificationError(
        'invalid_body',
        'onceonly: the mailgun body has no signature object with timestamp, token and signature',
      );
    }
    const candidates = offeredSignatures('mailgun signature', [signature], 'hex');
    checkTolerance(parseTimestamp('mailgun signature.timestamp', timestamp), receivedAt, tolerance);
    requireMatch('mailgun', hmacEach('sha256', keys, [timestamp, token]), candidates);
    return { event, token };
  }

  return {
    name: 'mailgun',
    retentionMs: retention,
    authenticate(input: DeliveryInput): void {
      authenticate(input);
    },
    verify(input: DeliveryInput): Verified<E> {
      const { event, token } = authenticate(input);

      const data = event['event-data'] ?? event;
      return {
        event: event as E,
        type: stringField(data, 'event'),
        id: stringField(data, 'id'),
        // The token is the only signed material that identifies this delivery.
        dedup: 'id',
        key: `token:${token}`,
      };
    },
  };
}
