import type { Duration } from '../core/duration.js';
import { timestampedHmac } from './families/timestampedHmac.js';
import type { SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/** A Box webhook (v2): `id`, `trigger` (`FILE.UPLOADED`...), `source`, `webhook`, `created_at`. */
export interface BoxEvent {
  type: string;
  id: string;
  trigger: string;
  source?: Record<string, unknown>;
  webhook?: { id: string; type: string };
  created_at?: string;
  [field: string]: unknown;
}

export interface BoxOptions {
  /**
   * The primary and secondary signature keys (Developer Console → your app → Webhooks → Manage
   * signature keys), as an array; one alone works too. Each signs its own header, and a delivery
   * verifies when either matches, so one key can be rotated while the other still checks.
   * @example [process.env.BOX_PRIMARY_KEY!, process.env.BOX_SECONDARY_KEY!]
   */
  secret: SecretInput;
  /**
   * How far `BOX-DELIVERY-TIMESTAMP` may be from `receivedAt`, in both directions. Box's SDKs allow
   * 10 minutes.
   * @default '10m'
   */
  tolerance?: Duration;
  /**
   * How long a completed event id is remembered. Box retries a failed delivery with backoff; its
   * window is not published, so the 3-day default for unknown windows applies.
   * @default '3d'
   */
  retention?: Duration;
}

const declaration = timestampedHmac({
  name: 'box',
  retention: '3d',
  tolerance: '10m',
  secret: { expected: "the app's primary and secondary webhook signature keys" },
  signature: {
    header: 'box-signature-primary',
    alsoIn: ['box-signature-secondary'],
    encoding: 'base64',
  },
  timestamp: { header: 'box-delivery-timestamp', unit: 'rfc3339' },
  // Box signs the body, then the delivery timestamp as sent.
  signed: ({ body, timestamp }) => [body, timestamp ?? ''],
  event: { id: 'id', type: 'trigger', typeSigned: true },
});

/**
 * Box: `BOX-SIGNATURE-PRIMARY` and `BOX-SIGNATURE-SECONDARY: <base64>`, each an HMAC-SHA256 of the
 * body followed by `BOX-DELIVERY-TIMESTAMP` (RFC 3339), one under each of the app's two keys; either
 * may match. Dedup keys on the signed event `id`; the type is `trigger`.
 *
 * @example
 * createReceiver({ provider: box({ secret: [process.env.BOX_PRIMARY_KEY!, process.env.BOX_SECONDARY_KEY!] }), store, on: { 'FILE.UPLOADED': scan } });
 */
export function box<E = BoxEvent>(options: BoxOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}
