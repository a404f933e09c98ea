import type { Duration } from '../core/duration.js';
import { timestampedHmac } from './families/timestampedHmac.js';
import type { SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/** A Linear webhook: `action`, `type` (`Issue`, `Comment`...), `data`, `webhookTimestamp` (ms). */
export interface LinearEvent {
  action: string;
  type: string;
  data: Record<string, unknown>;
  url?: string;
  createdAt?: string;
  organizationId?: string;
  webhookTimestamp: number;
  webhookId?: string;
  [field: string]: unknown;
}

export interface LinearOptions {
  /**
   * The webhook's signing secret (`lin_wh_...`, Settings → API → Webhooks); an array while rotating.
   * @example process.env.LINEAR_WEBHOOK_SECRET!
   */
  secret: SecretInput;
  /**
   * How far the body's `webhookTimestamp` may be from `receivedAt`, in both directions. Linear's
   * SDK uses one minute; the shared 5-minute default tolerates ordinary clock skew.
   * @default '5m'
   * @example '1m'
   */
  tolerance?: Duration;
  /**
   * How long a completed event's digest is remembered. Linear retries 3 times over about 7 hours
   * (1 minute, 1 hour, 6 hours); a day leaves a margin.
   * @default '1d'
   * @example '3d'
   */
  retention?: Duration;
}

const declaration = timestampedHmac({
  name: 'linear',
  retention: '1d',
  secret: {
    lookalikes: [['lin_api_', 'a Linear API key']],
    expected: "the webhook's signing secret (lin_wh_...) from Settings → API → Webhooks",
  },
  signature: { header: 'linear-signature', encoding: 'hex' },
  // Freshness is the signed body's own webhookTimestamp (ms), read after the signature checks out.
  timestamp: { bodyField: 'webhookTimestamp', unit: 'ms' },
  signedPrefix: () => '',
  event: {
    id: { header: 'linear-delivery', signed: false },
    type: 'type',
    typeSigned: true,
    // Written by Linear on every attempt, so left out of the dedup digest: the key and fingerprint
    // are a digest of the signed body without it.
    perAttempt: ['webhookTimestamp'],
  },
});

/**
 * Linear: `Linear-Signature: <hex>` over the body, HMAC-SHA256; freshness comes from
 * `webhookTimestamp` (ms) inside the signed body. `Linear-Delivery` is unsigned, so dedup keys on
 * a digest of the signed body with `webhookTimestamp` left out (Linear stamps each attempt anew).
 *
 * @example
 * createReceiver({ provider: linear({ secret: process.env.LINEAR_WEBHOOK_SECRET! }), store, on: { Issue: handleIssue } });
 */
export function linear<E = LinearEvent>(options: LinearOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}
