import type { Duration } from '../core/duration.js';
import { VerificationError } from '../errors.js';
import { asymmetric } from './families/asymmetric.js';
import { parseJson, stringField } from './shared.js';
import type { AuthenticatingProvider, BatchItem, DeliveryInput, Verified } from './types.js';

/** One SendGrid event; a delivery carries an array of them. */
export interface SendgridEvent {
  email?: string;
  timestamp?: number;
  event: string;
  sg_event_id: string;
  sg_message_id?: string;
  [field: string]: unknown;
}

export interface SendgridOptions {
  /**
   * The Event Webhook's verification key as the Mail Settings page shows it (base64 of the DER
   * public key, `MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE...`), or the same key as PEM; an array while
   * rotating. It is a public key: there is no secret to keep.
   * @example process.env.SENDGRID_WEBHOOK_PUBLIC_KEY!
   */
  publicKey: string | readonly string[];
  /**
   * How far the signed timestamp may be from `receivedAt`, in both directions. SendGrid's SDK
   * checks none; onceonly does.
   * @default '5m'
   * @example '10m'
   */
  tolerance?: Duration;
  /**
   * How long a completed event is remembered. SendGrid retries for up to 24 hours, and duplicates
   * have been seen over 29 hours; 3 days leaves a margin.
   * @default '3d'
   * @example '7d'
   */
  retention?: Duration;
}

/**
 * The body is an array of events, each deduplicated on its own signed `sg_event_id` (the receiver
 * claims each); `event`, `id` and `type` are the first event's.
 */
function describe(input: DeliveryInput): Verified<SendgridEvent> {
  const events = parseJson(input.rawBody);
  if (!Array.isArray(events) || events.length === 0) {
    throw new VerificationError('invalid_body', 'onceonly: the sendgrid body must be a JSON array of events');
  }
  const batch: BatchItem<SendgridEvent>[] = [];
  for (const e of events) {
    const id = stringField(e, 'sg_event_id');
    if (id === undefined) {
      throw new VerificationError(
        'missing_event_id',
        'onceonly: a sendgrid event has no sg_event_id; SendGrid always sends one, so this delivery is refused',
      );
    }
    batch.push({ id, type: stringField(e, 'event'), event: e as SendgridEvent });
  }
  const first = batch[0]!;
  return { event: first.event, id: first.id, type: first.type, typeSigned: true, dedup: 'id', batch };
}

const declaration = asymmetric({
  name: 'sendgrid',
  retention: '3d',
  algorithm: 'ecdsa-p256-sha256',
  publicKey: {
    format: 'spki',
    expected: 'the verification key (an ECDSA P-256 public key) from Mail Settings → Event Webhook',
  },
  signature: { header: 'x-twilio-email-event-webhook-signature', encoding: 'base64', dsaEncoding: 'der' },
  timestamp: { header: 'x-twilio-email-event-webhook-timestamp' },
  // Signed: timestamp + body (the family's default).
  describe,
});

/**
 * SendGrid Event Webhook (signed): `X-Twilio-Email-Event-Webhook-Signature` (base64 DER) over
 * timestamp + body, ECDSA P-256 with SHA-256, checked against your public verification key.
 * The body is an array of events, each with a signed `sg_event_id`: the receiver claims, runs and
 * confirms each event on its own key (`sendgrid:<sg_event_id>`) and calls your handler once per
 * event, so a batch that comes back (in any grouping) re-runs only the events that did not complete.
 * `on` routes by each event's `event` field (`delivered`, `open`, `bounce`...).
 *
 * @example
 * createReceiver({
 *   provider: sendgrid({ publicKey: process.env.SENDGRID_WEBHOOK_PUBLIC_KEY! }),
 *   store,
 *   on: { bounce: ({ event }) => suppress(event.email), delivered: ({ event }) => track(event) },
 * });
 */
export function sendgrid<E extends SendgridEvent = SendgridEvent>(
  options: SendgridOptions,
): AuthenticatingProvider<E> {
  return declaration(options) as unknown as AuthenticatingProvider<E>;
}
