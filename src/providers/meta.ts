import type { Duration } from '../core/duration.js';
import { ConfigError, VerificationError } from '../errors.js';
import { bodyHmac } from './families/bodyHmac.js';
import { echo, plainChallenge, queryOf, tokenEquals } from './families/challenge.js';
import type { SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/**
 * A Meta Graph API webhook (WhatsApp Cloud API, Messenger, Instagram, Pages): `object` names the
 * product (`whatsapp_business_account`, `page`, `instagram`), `entry` holds the changes or messages.
 */
export interface MetaEvent {
  object: string;
  entry: Record<string, unknown>[];
  [field: string]: unknown;
}

export interface MetaOptions {
  /**
   * The app secret (App settings → Basic → App secret); an array while rotating. It signs every
   * delivery (`X-Hub-Signature-256`).
   * @example process.env.META_APP_SECRET!
   */
  secret: SecretInput;
  /**
   * The verify token you typed into the webhook settings: the receiver answers Meta's
   * `hub.mode=subscribe` GET with `hub.challenge` only when `hub.verify_token` equals it (compared in
   * constant time). Without it, such a GET is refused (`invalid_token`).
   * @example process.env.META_VERIFY_TOKEN!
   */
  verifyToken?: string;
  /**
   * How long a completed delivery's digest is remembered. Meta retries a failed delivery with
   * decreasing frequency for up to 7 days, and a captured request verifies forever (no timestamp),
   * so this is also the window in which a replay is caught. 7 days plus a day of margin.
   * @default '8d'
   * @example '30d'
   */
  retention?: Duration;
}

const declaration = bodyHmac({
  name: 'meta',
  retention: '8d',
  secret: {
    // User, page and system-user access tokens all start with EAA; app secrets are 32 hex digits.
    lookalikes: [['EAA', 'an access token']],
    expected: 'the app secret (App settings → Basic → App secret)',
  },
  signature: { header: 'x-hub-signature-256', encoding: 'hex', prefix: 'sha256=' },
  event: {
    // Meta sends no delivery id; an entry may batch several changes. The signed body is the key.
    type: 'object',
    typeSigned: true,
  },
  // The subscription check: GET ?hub.mode=subscribe&hub.verify_token=<yours>&hub.challenge=<c>,
  // answered with <c>. Unsigned, so it computes nothing with the app secret: it only compares the
  // verify token and echoes the challenge.
  handshake: (request, { options }) => {
    if (request.method !== 'GET') return undefined;
    const query = queryOf(request);
    if (query.get('hub.mode') !== 'subscribe') return undefined;
    const expected = options.verifyToken as string | undefined;
    const offered = query.get('hub.verify_token');
    if (expected === undefined || offered === null || !tokenEquals(offered, expected)) {
      throw new VerificationError(
        'invalid_token',
        expected === undefined
          ? 'onceonly: a meta subscription check arrived, but no verifyToken is configured; pass meta({ verifyToken })'
          : 'onceonly: the meta hub.verify_token does not match the configured verifyToken',
      );
    }
    return echo(plainChallenge(query.get('hub.challenge'), 'meta hub.challenge query parameter'));
  },
});

/**
 * Meta (WhatsApp Cloud API, Messenger, Instagram, Pages): `X-Hub-Signature-256: sha256=<hex>` over
 * the body, HMAC-SHA256 with the app secret. Meta sends no delivery id, so dedup keys on a digest of
 * the signed body; `on` routes by `object`. The subscription check (a GET with `hub.mode=subscribe`)
 * is answered by the receiver itself once `hub.verify_token` equals `verifyToken`: route GET to the
 * webhook too (see docs/adapters.md).
 *
 * @example
 * createReceiver({
 *   provider: meta({ secret: process.env.META_APP_SECRET!, verifyToken: process.env.META_VERIFY_TOKEN! }),
 *   store,
 *   on: { whatsapp_business_account: ({ event }) => handleWhatsApp(event.entry) },
 * });
 */
export function meta<E = MetaEvent>(options: MetaOptions): AuthenticatingProvider<E> {
  const { verifyToken } = options;
  if (verifyToken !== undefined && (typeof verifyToken !== 'string' || verifyToken.trim() === '')) {
    throw new ConfigError(
      'invalid_option',
      'onceonly: meta verifyToken must be the non-empty token typed into the webhook settings',
    );
  }
  return declaration(options) as AuthenticatingProvider<E>;
}
