import type { Duration } from '../core/duration.js';
import { timestampedHmac } from './families/timestampedHmac.js';
import type { SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/** A Persona webhook (JSON:API): `data.id` (`evt_...`), `data.attributes.name` (`inquiry.completed`). */
export interface PersonaEvent {
  data: {
    type: string;
    id: string;
    attributes: { name: string; payload?: Record<string, unknown>; created_at?: string };
  };
  [field: string]: unknown;
}

export interface PersonaOptions {
  /**
   * The webhook's secret (`wbhsec_...`, Dashboard → Webhooks); an array while rotating.
   * @example process.env.PERSONA_WEBHOOK_SECRET!
   */
  secret: SecretInput;
  /**
   * How far the `t=` timestamp may be from `receivedAt`, in both directions.
   * @default '5m'
   */
  tolerance?: Duration;
  /**
   * How long a completed event id is remembered. Persona retries failed deliveries with backoff;
   * its window is not published, so the 3-day default for unknown windows applies.
   * @default '3d'
   */
  retention?: Duration;
}

const declaration = timestampedHmac({
  name: 'persona',
  retention: '3d',
  secret: {
    lookalikes: [
      ['persona_production_', 'a production API key'],
      ['persona_sandbox_', 'a sandbox API key'],
    ],
    expected: "the webhook's secret (wbhsec_...) from Dashboard → Webhooks",
  },
  // While a secret rotates Persona sends two whole lists, space-separated: `t=..,v1=.. t=..,v1=..`.
  signature: {
    header: 'persona-signature',
    separator: ',',
    timestamp: 't',
    signature: 'v1',
    groupSeparator: ' ',
  },
  signedPrefix: (t) => `${t}.`,
  event: { id: ['data', 'id'], type: ['data', 'attributes', 'name'], typeSigned: true },
});

/**
 * Persona: `Persona-Signature: t=<ts>,v1=<hex>` over `t.body`, HMAC-SHA256 (two space-separated
 * lists while rotating, either may match). Dedup keys on the signed `data.id`; the type is
 * `data.attributes.name`.
 *
 * @example
 * createReceiver({ provider: persona({ secret: process.env.PERSONA_WEBHOOK_SECRET! }), store, on: { 'inquiry.approved': approve } });
 */
export function persona<E = PersonaEvent>(options: PersonaOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}
