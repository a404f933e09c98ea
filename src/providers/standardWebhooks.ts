import { ConfigError, VerificationError } from '../errors.js';
import type { Duration } from '../lease/duration.js';
import {
  asBuffer,
  checkTolerance,
  decodeSignature,
  type EventMapOfUnion,
  header,
  hmacEach,
  offeredSignatures,
  parseJsonObject,
  parseTimestamp,
  requireMatch,
  retentionMs,
  type SecretInput,
  secretKeys,
  stringField,
  toleranceMs,
} from './shared.js';
import type { DeliveryInput, Provider, Verified } from './types.js';

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

/** Picks the header family the delivery uses: `webhook-*` (the spec) or `svix-*` (Svix's own). */
function family(headers: Headers): 'webhook' | 'svix' {
  if (header(headers, 'webhook-id') !== undefined) return 'webhook';
  if (header(headers, 'svix-id') !== undefined) return 'svix';
  throw new VerificationError('missing_header', 'onceonly: the webhook-id (or svix-id) header is missing');
}

function required(headers: Headers, name: string): string {
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
): Provider<E, StandardWebhooksEventMap<E>> {
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

  return {
    name,
    retentionMs: retention,
    verify({ rawBody, headers, receivedAt }: DeliveryInput): Verified<E> {
      const f = family(headers);
      const id = required(headers, `${f}-id`);
      const timestamp = required(headers, `${f}-timestamp`);
      const signatures = required(headers, `${f}-signature`);
      // Only `v1,<base64>` entries are HMAC signatures; `v1a,` (asymmetric) and unknown versions are skipped.
      const offered: string[] = [];
      for (const entry of signatures.split(' ')) {
        if (entry.startsWith('v1,')) offered.push(entry.slice(3));
      }
      const candidates = offeredSignatures(`${f}-signature v1,`, offered, 'base64');
      checkTolerance(parseTimestamp(`${f}-timestamp`, timestamp), receivedAt, tolerance);
      const body = asBuffer(rawBody);
      requireMatch(name, hmacEach('sha256', keys, [id, '.', timestamp, '.', body]), candidates);

      const event = parseJsonObject(body);
      return { event: event as E, type: stringField(event, 'type'), id, dedup: 'id' };
    },
  };
}
