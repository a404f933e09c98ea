import { type StandardWebhooksSenderOptions, standardWebhooksFamily } from './families/standardWebhooks.js';
import { decodeStrict } from './shared.js';
import type { StandardWebhooksEvent, StandardWebhooksEventMap } from './standardWebhooks.js';
import type { AuthenticatingProvider } from './types.js';

/** A Polar webhook: `{ type: 'order.paid', timestamp, data }`. */
export type PolarEvent = StandardWebhooksEvent;

/**
 * `secret`: the endpoint's secret exactly as Polar shows it (`whsec_...`; `polar_whs_...` for older
 * endpoints). Retention default 4 days.
 */
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
    expected:
      "the endpoint's secret (whsec_..., or polar_whs_... for older endpoints) from Settings → Webhooks",
    // Polar signed with the secret's own UTF-8 bytes (its SDK base64-encodes the secret string
    // before handing it to standardwebhooks), and still does for endpoints whose secret was made
    // before 2026-09-08.
    decode: (s) => Buffer.from(s, 'utf8'),
  },
  // Secrets made since then (`whsec_` + base64 of 32 bytes) are signed per the spec, keyed with
  // the base64 decoding; Polar's SDK tries both keys, and so does this provider.
  alternateKey: (s) =>
    s.startsWith('whsec_') ? decodeStrict(s.slice('whsec_'.length), 'base64') : undefined,
});

/**
 * Polar: Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>` over
 * `id.timestamp.body`, HMAC-SHA256), keyed as Polar signs: per the spec (the base64 after `whsec_`)
 * for endpoints whose secret was made since 2026-09-08, with the secret's own UTF-8 bytes for older
 * ones; both are tried, as Polar's SDK does. Dedup keys on the signed `webhook-id`.
 *
 * @example
 * createReceiver({ provider: polar({ secret: process.env.POLAR_WEBHOOK_SECRET! }), store, on: { 'order.paid': fulfil } });
 */
export function polar<E = PolarEvent>(
  options: PolarOptions,
): AuthenticatingProvider<E, StandardWebhooksEventMap<E>> {
  return declaration(options) as AuthenticatingProvider<E, StandardWebhooksEventMap<E>>;
}
