import type { Duration } from '../core/duration.js';
import { VerificationError } from '../errors.js';
import { urlFormHmac } from './families/urlFormHmac.js';
import { type HmacAlgorithm, header, type SecretInput } from './shared.js';
import type { AuthenticatingProvider, HeaderReader } from './types.js';

/** A Twilio callback: the form fields (`CallSid`, `MessageStatus`...), or the JSON body when it has one. */
export type TwilioEvent = Record<string, unknown>;

export interface TwilioOptions {
  /**
   * The account's Auth Token (Console → Account info); an array while rotating to a secondary token.
   * @example process.env.TWILIO_AUTH_TOKEN!
   */
  secret: SecretInput;
  /**
   * The public URL Twilio calls, exactly as configured (with its query string). Twilio signs it,
   * and behind a proxy the URL the request arrives at often differs. When unset, the delivery's
   * `url` is used; both are also tried with the default port added and removed, normalised
   * and with a legacy-encoded query, as Twilio's SDK does.
   * @default the delivery's url
   * @example 'https://example.com/twilio/status'
   */
  url?: string;
  /**
   * How long a completed callback's digest is remembered. Twilio retries only when configured to,
   * within seconds; a captured request verifies forever (no timestamp), so this is the replay window.
   * @default '1d'
   * @example '7d'
   */
  retention?: Duration;
}

function algorithmOf(headers: HeaderReader, fallback: HmacAlgorithm): HmacAlgorithm {
  const settings = header(headers, 'x-twilio-webhooks-signature-settings');
  if (settings === undefined) return fallback;
  for (const part of settings.split(',')) {
    const at = part.indexOf('=');
    if (at !== -1 && part.slice(0, at).trim() === 'algorithm') {
      const name = part
        .slice(at + 1)
        .trim()
        .toUpperCase();
      if (name === '' || name === 'HMAC_SHA1') return 'sha1';
      if (name === 'HMAC_SHA256') return 'sha256';
      throw new VerificationError(
        'malformed_header',
        'onceonly: x-twilio-webhooks-signature-settings names an algorithm onceonly does not support',
      );
    }
  }
  return fallback;
}

const declaration = urlFormHmac({
  name: 'twilio',
  retention: '1d',
  secret: {
    lookalikes: [
      ['AC', 'the Account SID'],
      ['SK', 'an API key SID'],
    ],
    expected: 'the Auth Token from Console → Account info',
  },
  algorithm: 'sha1',
  algorithmOf,
  signature: { header: 'x-twilio-signature', encoding: 'base64' },
  urlWhat: 'Twilio calls',
});

/**
 * Twilio: `X-Twilio-Signature: <base64>` over the URL followed by the sorted form parameters,
 * HMAC-SHA1 with the Auth Token (HMAC-SHA256 when `X-Twilio-Webhooks-Signature-Settings` says so).
 * JSON bodies are covered by the `bodySHA256` query parameter, whose value must equal the body's
 * SHA-256. Callbacks carry no id unique to one callback, so dedup keys on a digest of what the
 * signature covers (`signedDigest`): the signed URL followed by the sorted, decoded parameters, or
 * for JSON the signed URL with its `bodySHA256`. A replay re-encoded (percent-encoding, order,
 * repeated pairs) verifies, and lands on the same key.
 *
 * @example
 * createReceiver({ provider: twilio({ secret: process.env.TWILIO_AUTH_TOKEN!, url: 'https://example.com/twilio/status' }), store, handler });
 */
export function twilio<E = TwilioEvent>(options: TwilioOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}
