import { type BodyHmacSenderOptions, bodyHmacSenders } from './families/bodyHmacSenders.js';
import type { AuthenticatingProvider } from './types.js';

/** A Segment event as its Webhooks destination sends it: `messageId`, `type` (`track`...), `event`. */
export interface SegmentEvent {
  messageId: string;
  type: string;
  event?: string;
  userId?: string | null;
  anonymousId?: string | null;
  properties?: Record<string, unknown>;
  [field: string]: unknown;
}

/**
 * `secret`: the shared secret of the Webhooks destination's settings; an array while rotating.
 * `retention` (default `'1d'`): how long a completed message id is remembered. Segment retries
 * failed deliveries for up to 4 hours; a day leaves a margin.
 */
export type SegmentOptions = BodyHmacSenderOptions;

/**
 * Segment (Webhooks destination): `X-Signature: <hex>` over the body, HMAC-SHA1 with the shared
 * secret. Dedup keys on the signed `messageId`; the type is `type` (`track`, `identify`...): route a
 * track event by its `event` name in your handler.
 *
 * @example
 * createReceiver({ provider: segment({ secret: process.env.SEGMENT_SHARED_SECRET! }), store, on: { track: record } });
 */
export function segment<E = SegmentEvent>(options: SegmentOptions): AuthenticatingProvider<E> {
  return bodyHmacSenders.segment(options) as AuthenticatingProvider<E>;
}
