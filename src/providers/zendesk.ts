import type { Duration } from '../core/duration.js';
import { timestampedHmac } from './families/timestampedHmac.js';
import type { SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/**
 * A Zendesk webhook: for event subscriptions `{ id, type: 'zen:event-type:...', time, detail,
 * event }`; for trigger and automation webhooks, the body you wrote.
 */
export interface ZendeskEvent {
  id?: string;
  type?: string;
  [field: string]: unknown;
}

export interface ZendeskOptions {
  /**
   * The webhook's signing secret (Admin Center → Webhooks → your webhook → Reveal secret); an array
   * while rotating.
   * @example process.env.ZENDESK_WEBHOOK_SECRET!
   */
  secret: SecretInput;
  /**
   * How far `X-Zendesk-Webhook-Signature-Timestamp` may be from `receivedAt`, both directions.
   * @default '5m'
   */
  tolerance?: Duration;
  /**
   * How long a completed delivery is remembered. Zendesk retries a failed delivery a few times
   * within minutes; a day leaves a margin.
   * @default '1d'
   */
  retention?: Duration;
}

const declaration = timestampedHmac({
  name: 'zendesk',
  retention: '1d',
  secret: { expected: "the webhook's signing secret (Admin Center → Apps and integrations → Webhooks)" },
  signature: { header: 'x-zendesk-webhook-signature', encoding: 'base64' },
  // An RFC 3339 time (`2026-11-30T05:00:00Z`), signed exactly as sent, right before the body.
  timestamp: { header: 'x-zendesk-webhook-signature-timestamp', unit: 'rfc3339' },
  signedPrefix: (t) => t,
  event: {
    // Event-subscription webhooks carry a signed id; trigger webhooks carry what you wrote, so
    // without an id dedup keys on a digest of the body.
    id: 'id',
    idRequired: false,
    type: 'type',
    typeSigned: true,
  },
});

/**
 * Zendesk: `X-Zendesk-Webhook-Signature: <base64>` over timestamp + body (no separator),
 * HMAC-SHA256, with `X-Zendesk-Webhook-Signature-Timestamp` an RFC 3339 time checked against the
 * tolerance. Event-subscription webhooks key on their signed `id` and route by `type`; trigger
 * webhooks (your own body) key on a digest of the body.
 *
 * @example
 * createReceiver({ provider: zendesk({ secret: process.env.ZENDESK_WEBHOOK_SECRET! }), store, on: { 'zen:event-type:ticket.created': triage } });
 */
export function zendesk<E = ZendeskEvent>(options: ZendeskOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}
