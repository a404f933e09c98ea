import { type BodyHmacSenderOptions, bodyHmacSenders } from './families/bodyHmacSenders.js';
import type { AuthenticatingProvider } from './types.js';

/** A Sentry integration webhook: `action`, `installation`, `data`, `actor`. */
export interface SentryEvent {
  action?: string;
  data?: Record<string, unknown>;
  [field: string]: unknown;
}

/**
 * `secret`: the integration's client secret (Settings → Developer Settings → your integration); an
 * array while rotating. `retention` (default `'1d'`): how long a completed delivery's digest is
 * remembered. The `Sentry-Hook-Timestamp` header is not signed, so a captured request verifies
 * forever: this is also the replay window. 1 day.
 */
export type SentryOptions = BodyHmacSenderOptions;

/**
 * Sentry integration platform: `Sentry-Hook-Signature: <hex>` over the body, HMAC-SHA256 with the
 * client secret. The type is the unsigned `Sentry-Hook-Resource` (the receiver binds it into the
 * fingerprint); `Request-ID` is unsigned too, so dedup keys on a digest of the body.
 *
 * @example
 * createReceiver({ provider: sentry({ secret: process.env.SENTRY_CLIENT_SECRET! }), store, on: { issue: triage } });
 */
export function sentry<E = SentryEvent>(options: SentryOptions): AuthenticatingProvider<E> {
  return bodyHmacSenders.sentry(options) as AuthenticatingProvider<E>;
}
