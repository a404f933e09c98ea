import type { Duration } from '../core/duration.js';
import { ConfigError } from '../errors.js';
import { bodyHmac } from './families/bodyHmac.js';
import { decodeStrict, type SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/** An Airtable notification: which base and webhook have new payloads to list, and when. */
export interface AirtableEvent {
  base: { id: string };
  webhook: { id: string };
  timestamp: string;
  [field: string]: unknown;
}

export interface AirtableOptions {
  /**
   * The webhook's `macSecretBase64`, returned once when the webhook was created; an array while
   * rotating.
   * @example process.env.AIRTABLE_WEBHOOK_MAC_SECRET!
   */
  secret: SecretInput;
  /**
   * How long a completed notification's digest is remembered. A notification only says that new
   * payloads are waiting; a captured one verifies forever, so this is also the replay window. 1 day.
   * @default '1d'
   */
  retention?: Duration;
}

const declaration = bodyHmac({
  name: 'airtable',
  retention: '1d',
  secret: {
    expected: "the webhook's macSecretBase64 (from the create-webhook response)",
    refuse: (s) =>
      /^pat[A-Za-z0-9]{14}\./.test(s)
        ? "the airtable secret looks like a personal access token; pass the webhook's macSecretBase64 instead"
        : undefined,
    // The MAC key is the base64-decoded secret.
    decode: (s) => {
      const key = decodeStrict(s, 'base64');
      if (!key || key.length === 0) {
        throw new ConfigError(
          'invalid_secret',
          "onceonly: the airtable secret must be the webhook's macSecretBase64 (base64)",
        );
      }
      return key;
    },
  },
  signature: { header: 'x-airtable-content-mac', encoding: 'hex', prefix: 'hmac-sha256=' },
  // No id and no type: a digest of the body is the key.
});

/**
 * Airtable: `X-Airtable-Content-MAC: hmac-sha256=<hex>` over the body, HMAC-SHA256 keyed with the
 * base64-decoded `macSecretBase64`. A notification names the base and webhook whose payloads to
 * list; dedup keys on a digest of the body.
 *
 * @example
 * createReceiver({ provider: airtable({ secret: process.env.AIRTABLE_WEBHOOK_MAC_SECRET! }), store, handler: listPayloads });
 */
export function airtable<E = AirtableEvent>(options: AirtableOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}
