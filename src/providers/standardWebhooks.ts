import { ConfigError, VerificationError } from '../errors.js';
import type { Duration } from '../lease/duration.js';
import {
  checkTolerance,
  decodeSignature,
  type EventMapOfUnion,
  header,
  parseJsonObject,
  parseTimestamp,
  requireHmac,
  retentionMs,
  type SecretInput,
  secretKeys,
  stringField,
  toleranceMs,
} from './shared.js';
import type { AuthenticatingProvider, DeliveryInput, HeaderReader, Verified } from './types.js';

/** A Standard Webhooks payload: `type`, `timestamp` and `data` by convention. */
export interface StandardWebhooksEvent {
  type?: string;
  timestamp?: string;
  data?: unknown;
  [field: string]: unknown;
}

export interface StandardWebhooksOptions {
  /**
   * The signing secret as the sender's dashboard shows it: `whsec_` followed by base64 key bytes
   * (the prefix is optional); an array while rotating (any one may match).
   * @example process.env.SVIX_WEBHOOK_SECRET!
   */
  secret: SecretInput;
  /**
   * The first segment of every dedup key; name the sender so two senders never share keys.
   * @default 'standard-webhooks'
   * @example 'clerk'
   */
  name?: string;
  /**
   * How far `webhook-timestamp` may be from `receivedAt`, in both directions.
   * @default '5m'
   * @example '10m'
   */
  tolerance?: Duration;
  /**
   * How long a completed message id is remembered. Svix retries for about 28 hours and the spec's
   * example schedule runs about as long; senders may retry for up to 3 days, plus a day of margin.
   * @default '4d'
   * @example '7d'
   */
  retention?: Duration;
}

/**
 * The event map for typed `on` handlers: a union discriminated by a literal `type` (Clerk's
 * `WebhookEvent`, your own union) maps each name to its member; anything else maps any name to `E`.
 */
export type StandardWebhooksEventMap<E> = [E] extends [{ type: string }]
  ? string extends E['type']
    ? Record<string, E>
    : EventMapOfUnion<E>
  : Record<string, E>;

const PREFIX = 'whsec_';

/** The header names of one family, built once rather than per delivery. */
interface Family {
  readonly timestamp: string;
  readonly signature: string;
}
const WEBHOOK: Family = { timestamp: 'webhook-timestamp', signature: 'webhook-signature' };
const SVIX: Family = { timestamp: 'svix-timestamp', signature: 'svix-signature' };

function required(headers: HeaderReader, name: string): string {
  const value = header(headers, name);
  if (value === undefined)
    throw new VerificationError('missing_header', `onceonly: the ${name} header is missing`);
  return value;
}

/**
 * Standard Webhooks (Svix, Resend, Clerk, and every sender following standardwebhooks.com):
 * `webhook-signature: v1,<base64> [v1,<base64> ...]` over `id.timestamp.body`, HMAC-SHA256 with the
 * base64-decoded `whsec_` secret. Accepts the `svix-id` / `svix-timestamp` / `svix-signature`
 * headers too. Dedup keys on the message id, which is signed and identical on every retry.
 *
 * @example
 * createReceiver({ provider: standardWebhooks({ secret: process.env.WEBHOOK_SECRET!, name: 'resend' }), store, handler });
 *
 * Pass the sender's event union for typed `on` handlers:
 *
 * @example
 * import type { WebhookEvent } from '@clerk/backend';
 * createReceiver({
 *   provider: standardWebhooks<WebhookEvent>({ secret: process.env.CLERK_WEBHOOK_SECRET!, name: 'clerk' }),
 *   store,
 *   on: { 'user.created': ({ event }) => createUser(event.data.id) },
 * });
 */
export function standardWebhooks<E = StandardWebhooksEvent>(
  options: StandardWebhooksOptions,
): AuthenticatingProvider<E, StandardWebhooksEventMap<E>> {
  const name = options.name ?? 'standard-webhooks';
  if (typeof name !== 'string' || !/^[a-z0-9][a-z0-9_.-]*$/i.test(name)) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: standardWebhooks name must be a short identifier like 'clerk', got ${JSON.stringify(name)}`,
    );
  }
  const keys = secretKeys(name, options.secret, (s) => {
    const encoded = s.startsWith(PREFIX) ? s.slice(PREFIX.length) : s;
    const key = decodeSignature(encoded, 'base64');
    if (!key || key.length === 0) {
      throw new ConfigError(
        'invalid_secret',
        `onceonly: the ${name} secret must be 'whsec_' followed by base64; copy it from the sender's dashboard`,
      );
    }
    return key;
  });
  const tolerance = toleranceMs(options.tolerance);
  const retention = retentionMs(options.retention, '4d');

  /**
   * The signature checks: headers, tolerance, HMAC over `id.timestamp.body`. Shared by
   * `authenticate` and `verify`; returns the message id (signed), which `verify` keys on.
   */
  function authenticate({ rawBody, headers, receivedAt }: DeliveryInput): string {
    // The header family: `webhook-*` (the spec) or `svix-*` (Svix's own); the id is read once.
    let f: Family = WEBHOOK;
    let id = header(headers, 'webhook-id');
    if (id === undefined) {
      id = header(headers, 'svix-id');
      if (id === undefined) {
        throw new VerificationError(
          'missing_header',
          'onceonly: the webhook-id (or svix-id) header is missing',
        );
      }
      f = SVIX;
    }
    const timestamp = required(headers, f.timestamp);
    const signatures = required(headers, f.signature);
    // Only `v1,<base64>` entries are HMAC signatures; `v1a,` (asymmetric) and unknown versions are
    // skipped. Each is decoded as it is found, without building a list of strings first.
    const candidates: Buffer[] = [];
    for (let from = 0; from <= signatures.length; ) {
      let end = signatures.indexOf(' ', from);
      if (end === -1) end = signatures.length;
      if (signatures.startsWith('v1,', from)) {
        const decoded = decodeSignature(signatures.slice(from + 3, end).trim(), 'base64');
        if (decoded) candidates.push(decoded);
      }
      from = end + 1;
    }
    if (candidates.length === 0) {
      throw new VerificationError(
        'malformed_header',
        `onceonly: the ${f.signature} v1, header holds no base64 signature`,
      );
    }
    checkTolerance(parseTimestamp(f.timestamp, timestamp), receivedAt, tolerance);
    requireHmac(name, 'sha256', keys, `${id}.${timestamp}.`, rawBody, candidates);
    return id;
  }

  return {
    name,
    retentionMs: retention,
    authenticate(input: DeliveryInput): void {
      authenticate(input);
    },
    verify(input: DeliveryInput): Verified<E> {
      const id = authenticate(input);
      const event = parseJsonObject(input.rawBody);
      return { event: event as E, type: stringField(event, 'type'), id, dedup: 'id' };
    },
  };
}
