import { createPublicKey, type KeyObject, verify as verifySignature } from 'node:crypto';
import { ConfigError, VerificationError } from '../errors.js';
import type { Duration } from '../lease/duration.js';
import {
  asBuffer,
  checkTolerance,
  decodeSignature,
  parseJson,
  parseTimestamp,
  requireHeader,
  retentionMs,
  stringField,
  toleranceMs,
} from './shared.js';
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

const SIGNATURE = 'x-twilio-email-event-webhook-signature';
const TIMESTAMP = 'x-twilio-email-event-webhook-timestamp';

function publicKeys(input: string | readonly string[] | undefined): KeyObject[] {
  const list = typeof input === 'string' ? [input] : Array.isArray(input) ? input : [];
  if (list.length === 0) {
    throw new ConfigError(
      'invalid_secret',
      "onceonly: sendgrid needs publicKey, the Event Webhook's verification key from Mail Settings",
    );
  }
  return list.map((raw: unknown, i) => {
    const text = typeof raw === 'string' ? raw.trim() : '';
    let key: KeyObject;
    try {
      if (text.startsWith('-----BEGIN')) key = createPublicKey(text);
      else {
        const der = decodeSignature(text.replace(/\s+/g, ''), 'base64');
        if (!der) throw new Error('not base64');
        key = createPublicKey({ key: der, format: 'der', type: 'spki' });
      }
    } catch (cause) {
      throw new ConfigError(
        'invalid_secret',
        `onceonly: sendgrid publicKey #${i + 1} is not a public key; copy the verification key from Mail Settings → Event Webhook`,
        { cause },
      );
    }
    if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
      throw new ConfigError(
        'invalid_secret',
        `onceonly: sendgrid publicKey #${i + 1} is not an ECDSA P-256 key; copy the verification key from Mail Settings → Event Webhook`,
      );
    }
    return key;
  });
}

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
  const keys = publicKeys(options.publicKey);
  const tolerance = toleranceMs(options.tolerance);
  const retention = retentionMs(options.retention, '3d');

  /** The signature checks: headers, tolerance, ECDSA over `timestamp + body`. Shared by `authenticate` and `verify`. */
  function authenticate({ rawBody, headers, receivedAt }: DeliveryInput): void {
    const signature = decodeSignature(requireHeader(headers, SIGNATURE), 'base64');
    if (!signature) {
      throw new VerificationError('malformed_header', `onceonly: the ${SIGNATURE} header is not base64`);
    }
    const timestamp = requireHeader(headers, TIMESTAMP);
    checkTolerance(parseTimestamp(TIMESTAMP, timestamp), receivedAt, tolerance);
    const body = asBuffer(rawBody);
    const signed = Buffer.concat([Buffer.from(timestamp, 'utf8'), body]);
    let ok = false;
    for (const key of keys) {
      if (verifySignature('sha256', signed, { key, dsaEncoding: 'der' }, signature)) ok = true;
    }
    if (!ok) {
      throw new VerificationError(
        'invalid_signature',
        'onceonly: the sendgrid signature did not verify; check the public key and that the body reaches onceonly unparsed',
      );
    }
  }

  return {
    name: 'sendgrid',
    retentionMs: retention,
    authenticate,
    verify(input: DeliveryInput): Verified<E> {
      authenticate(input);
      const events = parseJson(input.rawBody);
      if (!Array.isArray(events) || events.length === 0) {
        throw new VerificationError(
          'invalid_body',
          'onceonly: the sendgrid body must be a JSON array of events',
        );
      }
      const batch: BatchItem<E>[] = [];
      for (const e of events) {
        const id = stringField(e, 'sg_event_id');
        if (id === undefined) {
          throw new VerificationError(
            'missing_event_id',
            'onceonly: a sendgrid event has no sg_event_id; SendGrid always sends one, so this delivery is refused',
          );
        }
        batch.push({ id, type: stringField(e, 'event'), event: e as E });
      }
      // Every event is deduplicated on its own sg_event_id (the receiver claims each).
      const first = batch[0]!;
      return { event: first.event, id: first.id, type: first.type, dedup: 'id', batch };
    },
  };
}
