import type { Duration } from '../core/duration.js';
import { timestampedHmac } from './families/timestampedHmac.js';
import type { EventMapByField, SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/**
 * A Mux webhook: `type` (`video.asset.ready`...), `id`, `object`, `data`, `attempts`, `created_at`.
 * For the full typed union, pass `@mux/mux-node`'s own type (see {@link mux}).
 */
export interface MuxEvent {
  type: string;
  id: string;
  object?: { type: string; id: string };
  data?: Record<string, unknown>;
  attempts?: unknown[];
  created_at?: string;
  [field: string]: unknown;
}

export interface MuxOptions {
  /**
   * The webhook's signing secret (Settings → Webhooks → Show signing secret); an array while
   * rotating.
   * @example process.env.MUX_WEBHOOK_SECRET!
   */
  secret: SecretInput;
  /**
   * How far the `t=` timestamp may be from `receivedAt`, in both directions.
   * @default '5m'
   */
  tolerance?: Duration;
  /**
   * How long a completed event id is remembered. Mux retries for up to 24 hours; 2 days leaves a
   * margin.
   * @default '2d'
   */
  retention?: Duration;
}

const declaration = timestampedHmac({
  name: 'mux',
  retention: '2d',
  secret: { expected: "the webhook's signing secret (Settings → Webhooks)" },
  signature: { header: 'mux-signature', separator: ',', timestamp: 't', signature: 'v1' },
  signedPrefix: (t) => `${t}.`,
  event: {
    id: 'id',
    type: 'type',
    typeSigned: true,
    // The list of earlier attempts grows on every retry: left out of the content fingerprint.
    perAttempt: ['attempts'],
  },
});

/**
 * Mux: `Mux-Signature: t=<ts>,v1=<hex>` over `t.body`, HMAC-SHA256. Dedup keys on the signed event
 * `id`; the type is `type`. The body's `attempts` list grows on each retry and is left out of the
 * content fingerprint.
 *
 * @example
 * createReceiver({ provider: mux({ secret: process.env.MUX_WEBHOOK_SECRET! }), store, on: { 'video.asset.ready': publish } });
 *
 * Pass the union from `@mux/mux-node` (types only) for handlers narrowed by event name:
 *
 * @example
 * import type Mux from '@mux/mux-node';
 * createReceiver({
 *   provider: mux<Mux.Webhooks.UnwrapWebhookEvent>({ secret: process.env.MUX_WEBHOOK_SECRET! }),
 *   store,
 *   on: { 'video.asset.ready': ({ event }) => publish(event.data.playback_ids) },
 * });
 */
export function mux<E = MuxEvent>(
  options: MuxOptions,
): AuthenticatingProvider<E, EventMapByField<E, 'type'>> {
  return declaration(options) as AuthenticatingProvider<E, EventMapByField<E, 'type'>>;
}
