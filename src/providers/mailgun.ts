import type { Duration } from '../core/duration.js';
import { VerificationError } from '../errors.js';
import { timestampedHmac } from './families/timestampedHmac.js';
import { asBuffer, isForm, parseForm, parseJsonObject, type SecretInput, stringField } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

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
 * Mailgun's parts are fields of the body: `signature.timestamp`, `.token`, `.signature` (JSON), or
 * top-level `timestamp`, `token`, `signature` (legacy forms).
 */
function readSignature(input: { rawBody: Uint8Array; headers: import('./types.js').HeaderReader }) {
  const body = asBuffer(input.rawBody);
  let event: Record<string, unknown>;
  let sig: unknown;
  if (isForm(input.headers)) {
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
  return { event, token, timestamp, signature };
}

const declaration = timestampedHmac({
  name: 'mailgun',
  retention: '1d',
  // Mailgun retries a POST for 8 hours and warns that deliveries can be late.
  tolerance: '12h',
  secret: {
    lookalikes: [['pubkey-', 'the public validation key']],
    expected: 'the HTTP webhook signing key (Sending → Webhooks)',
  },
  signature: { header: 'mailgun signature', encoding: 'hex' },
  read: (input) => {
    const { event, token, timestamp, signature } = readSignature(input);
    return {
      timestamp,
      timestampName: 'mailgun signature.timestamp',
      signatures: [signature],
      signatureName: 'mailgun signature',
      // That is all Mailgun signs: the event data is unauthenticated.
      signed: [timestamp, token],
      parsed: event,
    };
  },
  describe: (_input, parsed) => {
    const event = parsed!;
    const sig = isObject(event.signature) ? event.signature : event;
    const data = event['event-data'] ?? event;
    return {
      event,
      type: stringField(data, 'event'),
      // The type is read from `event-data`, which Mailgun does not sign.
      typeSigned: false,
      id: stringField(data, 'id'),
      // The token is the only signed material that identifies this delivery.
      dedup: 'id',
      key: `token:${stringField(sig, 'token')}`,
    };
  },
});

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
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
  return declaration(options) as AuthenticatingProvider<E>;
}
