import type { Duration } from '../core/duration.js';
import { ConfigError, VerificationError } from '../errors.js';
import { type BodyHmacPart, bodyHmac } from './families/bodyHmac.js';
import { decodeStrict, parseJsonObject, type SecretInput } from './shared.js';
import type { AuthenticatingProvider, BatchItem, DeliveryInput, Verified } from './types.js';

/**
 * One Adyen notification item (`NotificationRequestItem`); a delivery carries one or more. For the
 * typed item, pass `@adyen/api-library`'s (see {@link adyen}).
 */
export interface AdyenEvent {
  pspReference: string;
  originalReference?: string;
  merchantAccountCode: string;
  merchantReference: string;
  amount: { value: number; currency: string };
  eventCode: string;
  success: string;
  eventDate?: string;
  reason?: string;
  additionalData?: Record<string, unknown>;
  [field: string]: unknown;
}

export interface AdyenOptions {
  /**
   * The webhook's HMAC key (hex, Customer Area → Developers → Webhooks → your webhook → HMAC key);
   * an array while rotating.
   * @example process.env.ADYEN_HMAC_KEY!
   */
  secret: SecretInput;
  /**
   * How long a completed notification is remembered. Adyen queues an unacknowledged notification
   * and retries it for up to 30 days; 31 days.
   * @default '31d'
   */
  retention?: Duration;
}

interface Item {
  readonly item: Record<string, unknown>;
  readonly at: number;
}

/** The items of a notification: `notificationItems[].NotificationRequestItem`. */
function itemsOf(body: Record<string, unknown>): Item[] {
  const list = body.notificationItems;
  if (!Array.isArray(list) || list.length === 0) {
    throw new VerificationError('invalid_body', 'onceonly: the adyen body has no notificationItems');
  }
  return list.map((entry, at) => {
    const item = (entry as { NotificationRequestItem?: unknown } | null)?.NotificationRequestItem;
    if (item === null || typeof item !== 'object' || Array.isArray(item)) {
      throw new VerificationError(
        'invalid_body',
        `onceonly: adyen notificationItems[${at}] holds no NotificationRequestItem`,
      );
    }
    return { item: item as Record<string, unknown>, at };
  });
}

const text = (value: unknown): string =>
  typeof value === 'string'
    ? value
    : typeof value === 'number' || typeof value === 'boolean'
      ? String(value)
      : '';

/**
 * What Adyen signs for one item: pspReference, originalReference, merchantAccountCode,
 * merchantReference, amount value, amount currency, eventCode, success, joined by `:` (absent ones
 * empty).
 */
export function adyenSignedString(item: Record<string, unknown>): string {
  const amount = (item.amount ?? {}) as Record<string, unknown>;
  return [
    item.pspReference,
    item.originalReference,
    item.merchantAccountCode,
    item.merchantReference,
    amount.value,
    amount.currency,
    item.eventCode,
    item.success,
  ]
    .map(text)
    .join(':');
}

function read(input: DeliveryInput): BodyHmacPart[] {
  return itemsOf(parseJsonObject(input.rawBody)).map(({ item, at }) => {
    const signature = (item.additionalData as Record<string, unknown> | undefined)?.hmacSignature;
    return {
      signature: typeof signature === 'string' ? signature : '',
      encoding: 'base64',
      signatureName: `adyen notificationItems[${at}] additionalData.hmacSignature`,
      signed: [adyenSignedString(item)],
    };
  });
}

/**
 * Each item keyed on what its signature covers (pspReference, eventCode, success: Adyen's own
 * identity of a notification) and routed by its signed `eventCode`.
 */
function describe(input: DeliveryInput): Verified<AdyenEvent> {
  const batch: BatchItem<AdyenEvent>[] = itemsOf(parseJsonObject(input.rawBody)).map(({ item }) => ({
    id: `${text(item.pspReference)}:${text(item.eventCode)}:${text(item.success)}`,
    type: text(item.eventCode) || undefined,
    event: item as AdyenEvent,
  }));
  const first = batch[0]!;
  return { event: first.event, id: first.id, type: first.type, typeSigned: true, dedup: 'id', batch };
}

const declaration = bodyHmac({
  name: 'adyen',
  retention: '31d',
  secret: {
    lookalikes: [['AQE', 'an API key']],
    expected: "the webhook's HMAC key (hex) from Customer Area → Developers → Webhooks",
    // The key is the hex the Customer Area shows, decoded.
    decode: (s) => {
      const key = decodeStrict(s.toLowerCase(), 'hex');
      if (!key || key.length === 0) {
        throw new ConfigError(
          'invalid_secret',
          "onceonly: the adyen HMAC key must be the webhook's hex HMAC key",
        );
      }
      return key;
    },
  },
  read,
  describe,
});

/**
 * Adyen (standard webhooks): no header; each notification item carries
 * `additionalData.hmacSignature`, base64 HMAC-SHA256 (hex-decoded key) of its pspReference,
 * originalReference, merchantAccountCode, merchantReference, amount value and currency, eventCode
 * and success joined by `:`. Every item must verify. Each item is keyed on pspReference, eventCode
 * and success, and routed by eventCode; **the item's other fields (additionalData, reason,
 * eventDate...) are not signed**.
 *
 * @example
 * createReceiver({ provider: adyen({ secret: process.env.ADYEN_HMAC_KEY! }), store, on: { AUTHORISATION: capture } });
 *
 * Pass `@adyen/api-library`'s item type (types only) for event codes checked by name and typed items:
 *
 * @example
 * import type { Types } from '@adyen/api-library';
 * createReceiver({
 *   provider: adyen<Types.notification.NotificationRequestItem>({ secret: process.env.ADYEN_HMAC_KEY! }),
 *   store,
 *   on: { AUTHORISATION: ({ event }) => capture(event.pspReference, event.amount) },
 * });
 */
export function adyen<E extends { eventCode: string } = AdyenEvent>(
  options: AdyenOptions,
): AuthenticatingProvider<E, AdyenEventMap<E>> {
  return declaration(options) as unknown as AuthenticatingProvider<E, AdyenEventMap<E>>;
}

/**
 * The event map for typed `on` handlers: every `eventCode` the item type names (an enum's values
 * included) maps to the item. With the default {@link AdyenEvent} any name is accepted.
 *
 * @example
 * // keyof AdyenEventMap<NotificationRequestItem> is 'AUTHORISATION' | 'CAPTURE' | 'REFUND' | ...
 */
export type AdyenEventMap<E extends { eventCode: string }> = string extends E['eventCode']
  ? Record<string, E>
  : { [N in `${E['eventCode']}`]: E };
