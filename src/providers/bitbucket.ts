import { type BodyHmacSenderOptions, bodyHmacSenders } from './families/bodyHmacSenders.js';
import type { AuthenticatingProvider } from './types.js';

/** A Bitbucket webhook payload (its shape depends on the `X-Event-Key`). */
export type BitbucketEvent = Record<string, unknown>;

/**
 * `secret`: the webhook's secret (Repository settings → Webhooks → Secret); an array while
 * rotating. `retention` (default `'1d'`): how long a completed delivery's digest is remembered.
 * Bitbucket Cloud retries a failed delivery twice within minutes; a captured request verifies
 * forever (no timestamp), so this is also the replay window. 1 day.
 */
export type BitbucketOptions = BodyHmacSenderOptions;

/**
 * Bitbucket (Cloud and Data Center): `X-Hub-Signature: sha256=<hex>` over the body, HMAC-SHA256.
 * `X-Event-Key` (`repo:push`) is the type and `X-Request-UUID` the id; neither is signed, so dedup
 * keys on a digest of the body and the receiver binds the type into the fingerprint.
 *
 * @example
 * createReceiver({ provider: bitbucket({ secret: process.env.BITBUCKET_WEBHOOK_SECRET! }), store, on: { 'repo:push': deploy } });
 */
export function bitbucket<E = BitbucketEvent>(options: BitbucketOptions): AuthenticatingProvider<E> {
  return bodyHmacSenders.bitbucket(options) as AuthenticatingProvider<E>;
}
