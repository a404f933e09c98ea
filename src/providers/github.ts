import type { Duration } from '../core/duration.js';
import { bodyHmac } from './families/bodyHmac.js';
import type { SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/** A GitHub webhook payload; pass `WebhookEventMap` from `@octokit/webhooks-types` for full types. */
export type GithubEvent = Record<string, unknown>;

export interface GithubOptions {
  /**
   * The webhook's secret, as typed into the webhook settings; an array while rotating.
   * @example process.env.GITHUB_WEBHOOK_SECRET!
   */
  secret: SecretInput;
  /**
   * How long a completed delivery's digest is remembered. GitHub does not retry on its own; a
   * delivery can be redelivered by hand for 3 days, and a captured request verifies forever (no
   * timestamp), so this is also the window in which a replay is caught. 3 days plus a day of margin.
   * @default '4d'
   * @example '30d'
   */
  retention?: Duration;
}

const declaration = bodyHmac({
  name: 'github',
  retention: '4d',
  secret: {
    lookalikes: [
      ['ghp_', 'a personal access token'],
      ['github_pat_', 'a fine-grained personal access token'],
      ['gho_', 'an OAuth token'],
      ['ghs_', 'an app installation token'],
      ['ghu_', 'an app user token'],
    ],
    expected: 'the secret you entered for the webhook (Settings → Webhooks)',
  },
  signature: { header: 'x-hub-signature-256', encoding: 'hex', prefix: 'sha256=' },
  requireHeaders: ['x-github-event'],
  event: {
    body: 'json-or-form-payload',
    // The delivery id is informational only: it is unsigned, so the body digest is the key.
    id: { header: 'x-github-delivery', signed: false },
    // X-GitHub-Event is not signed: the receiver binds it into the fingerprint.
    type: { header: 'x-github-event' },
    typeSigned: false,
  },
});

/**
 * GitHub: `X-Hub-Signature-256: sha256=<hex>` over the body, HMAC-SHA256. The event name comes from
 * `X-GitHub-Event` and the delivery id from `X-GitHub-Delivery`; neither header is signed, so dedup
 * keys on a digest of the signed body: a captured request replayed with a fresh delivery id is a
 * duplicate. Both `application/json` and `application/x-www-form-urlencoded` (`payload=`) bodies work.
 *
 * For typed handlers pass the map from `@octokit/webhooks-types` (types only):
 *
 * @example
 * import type { WebhookEventMap } from '@octokit/webhooks-types';
 * createReceiver({
 *   provider: github<WebhookEventMap>({ secret: process.env.GITHUB_WEBHOOK_SECRET! }),
 *   store,
 *   on: { push: ({ event }) => deploy(event.after) },
 * });
 */
export function github<M extends object = Record<string, GithubEvent>>(
  options: GithubOptions,
): AuthenticatingProvider<M[keyof M], { [K in keyof M & string]: M[K] }> {
  return declaration(options) as AuthenticatingProvider<M[keyof M], { [K in keyof M & string]: M[K] }>;
}
