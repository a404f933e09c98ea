import type { Duration } from '../core/duration.js';
import { bodyHmac } from './families/bodyHmac.js';
import type { SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/** A Netlify deploy notification: the deploy (`id`, `site_id`, `state`, `branch`...). */
export interface NetlifyEvent {
  id: string;
  site_id?: string;
  state?: string;
  [field: string]: unknown;
}

export interface NetlifyOptions {
  /**
   * The JWS secret token set on the notification (Site configuration → Notifications → outgoing
   * webhook → JWS secret token); an array while rotating.
   * @example process.env.NETLIFY_JWS_SECRET!
   */
  secret: SecretInput;
  /**
   * How long a completed notification's digest is remembered. The JWS has no time claim, so a
   * captured request verifies forever: this is also the replay window; the 3-day default for
   * unknown windows.
   * @default '3d'
   */
  retention?: Duration;
}

const declaration = bodyHmac({
  name: 'netlify',
  retention: '3d',
  secret: {
    lookalikes: [['nfp_', 'a personal access token']],
    expected: "the notification's JWS secret token",
  },
  algorithm: 'sha256',
  jws: { header: 'x-webhook-signature', issuer: 'netlify', bodyHashClaim: 'sha256' },
  event: {
    // The body is the deploy, whose id is the same for every event of one deploy: the key is a
    // digest of the body. X-Netlify-Event (`deploy_building`...) is not covered by the JWS.
    type: { header: 'x-netlify-event' },
    typeSigned: false,
  },
});

/**
 * Netlify: `X-Webhook-Signature` is a JWS (HS256) made with the notification's secret token, whose
 * claims are `iss: 'netlify'` and `sha256`, the hex SHA-256 of the body. Dedup keys on a digest of
 * the body; the type is the unsigned `X-Netlify-Event` header (bound into the fingerprint).
 *
 * @example
 * createReceiver({ provider: netlify({ secret: process.env.NETLIFY_JWS_SECRET! }), store, on: { deploy_created: announce } });
 */
export function netlify<E = NetlifyEvent>(options: NetlifyOptions): AuthenticatingProvider<E> {
  return declaration(options) as AuthenticatingProvider<E>;
}
