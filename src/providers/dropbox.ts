import type { Duration } from '../core/duration.js';
import { bodyHmac } from './families/bodyHmac.js';
import { echo, plainChallenge, queryOf } from './families/challenge.js';
import type { SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/**
 * A Dropbox webhook notification: which accounts have changes to fetch (`list_folder.accounts`),
 * never the changes themselves. `delta.users` is the legacy form of the same list.
 */
export interface DropboxEvent {
  list_folder?: { accounts: string[] };
  delta?: { users: number[] };
  [field: string]: unknown;
}

export interface DropboxOptions {
  /**
   * The app secret (App Console → Settings → App secret); an array while rotating.
   * @example process.env.DROPBOX_APP_SECRET!
   */
  secret: SecretInput;
  /**
   * How long a completed notification's digest is remembered. A notification only says "these
   * accounts changed" and carries no id or time, so a captured one verifies forever; a day catches
   * the retries and replays that matter (fetching the changes again is harmless anyway).
   * @default '1d'
   * @example '7d'
   */
  retention?: Duration;
}

const declaration = bodyHmac({
  name: 'dropbox',
  retention: '1d',
  secret: {
    lookalikes: [['sl.', 'a short-lived access token']],
    expected: 'the app secret (App Console → Settings)',
  },
  signature: { header: 'x-dropbox-signature', encoding: 'hex' },
  // No id and no type: the signed body is the key.
  event: { typeSigned: true },
  // The endpoint check: GET ?challenge=<c>, answered with <c> as text/plain and nosniff. Unsigned:
  // it is only echoed (a plain token, never markup), nothing is computed with the secret.
  handshake: (request) => {
    if (request.method !== 'GET') return undefined;
    const challenge = queryOf(request).get('challenge');
    if (challenge === null) return undefined;
    return echo(plainChallenge(challenge, 'dropbox challenge query parameter'));
  },
});

/**
 * Dropbox: `X-Dropbox-Signature: <hex>`, HMAC-SHA256 of the body with the app secret. A
 * notification names accounts with changes and carries no id or type, so dedup keys on a digest of
 * the signed body. The endpoint check (`GET ?challenge=...`) is answered by the receiver itself
 * (outcome `handshake`): route GET to the webhook too (see docs/adapters.md).
 *
 * @example
 * createReceiver({
 *   provider: dropbox({ secret: process.env.DROPBOX_APP_SECRET! }),
 *   store,
 *   handler: ({ event }) => syncAccounts(event.list_folder?.accounts ?? []),
 * });
 */
export function dropbox<E = DropboxEvent>(options: DropboxOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}
