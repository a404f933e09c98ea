import { type StandardWebhooksSenderOptions, standardWebhooksFamily } from './families/standardWebhooks.js';
import type { StandardWebhooksEvent, StandardWebhooksEventMap } from './standardWebhooks.js';
import type { AuthenticatingProvider } from './types.js';

/** A Polar webhook: `{ type: 'order.paid', timestamp, data }`. */
export type PolarEvent = StandardWebhooksEvent;

/** `secret`: the endpoint's secret exactly as Polar shows it (`polar_whs_...`). Retention default 4 days. */
export type PolarOptions = StandardWebhooksSenderOptions;

const declaration = standardWebhooksFamily({
  name: 'polar',
  retention: '4d',
  headers: ['webhook'],
  secret: {
    lookalikes: [
      ['polar_oat_', 'an organization access token'],
      ['polar_pat_', 'a personal access token'],
    ],
    expected: "the endpoint's secret (polar_whs_...) from Settings → Webhooks",
    // Polar's SDK base64-encodes the secret string before handing it to standardwebhooks: the key
    // is the secret's own UTF-8 bytes, not a base64 decoding of it.
    decode: (s) => Buffer.from(s, 'utf8'),
  },
});

/**
 * Polar: Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>` over
 * `id.timestamp.body`, HMAC-SHA256), keyed with the secret's own UTF-8 bytes as Polar's SDK does.
 * Dedup keys on the signed `webhook-id`.
 *
 * @example
 * createReceiver({ provider: polar({ secret: process.env.POLAR_WEBHOOK_SECRET! }), store, on: { 'order.paid': fulfil } });
 */
export function polar<E = PolarEvent>(
  options: PolarOptions,
): AuthenticatingProvider<E, StandardWebhooksEventMap<E>> {
  return declaration(options) as AuthenticatingProvider<E, StandardWebhooksEventMap<E>>;
}
