import type { Duration } from '../lease/duration.js';
import {
  asBuffer,
  header,
  hmacEach,
  isForm,
  offeredSignatures,
  parseForm,
  parseJsonObject,
  parseJsonObjectText,
  refusingLookalikes,
  requireHeader,
  requireMatch,
  retentionMs,
  type SecretInput,
  secretKeys,
} from './shared.js';
import type { AuthenticatingProvider, DeliveryInput, Verified } from './types.js';

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

const HEADER = 'x-hub-signature-256';

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
  const keys = secretKeys(
    'github',
    options.secret,
    refusingLookalikes(
      'github',
      [
        ['ghp_', 'a personal access token'],
        ['github_pat_', 'a fine-grained personal access token'],
        ['gho_', 'an OAuth token'],
        ['ghs_', 'an app installation token'],
        ['ghu_', 'an app user token'],
      ],
      'the secret you entered for the webhook (Settings → Webhooks)',
    ),
  );
  const retention = retentionMs(options.retention, '4d');

  /** The signature checks, shared by `authenticate` and `verify`; returns the (required) event type. */
  function authenticate({ rawBody, headers }: DeliveryInput): string {
    const candidates = offeredSignatures(HEADER, [requireHeader(headers, HEADER)], 'hex', 'sha256=');
    const type = requireHeader(headers, 'x-github-event');
    requireMatch('github', hmacEach('sha256', keys, [asBuffer(rawBody)]), candidates);
    return type;
  }

  return {
    name: 'github',
    retentionMs: retention,
    authenticate(input: DeliveryInput): void {
      authenticate(input);
    },
    verify(input: DeliveryInput): Verified<M[keyof M]> {
      const type = authenticate(input);
      const { headers } = input;
      const body = asBuffer(input.rawBody);
      const event = isForm(headers)
        ? parseJsonObjectText(parseForm(body).get('payload') ?? '', 'the payload form field')
        : parseJsonObject(body);
      // The delivery id is informational only: it is unsigned, so the body digest is the key.
      return {
        event: event as M[keyof M],
        type,
        id: header(headers, 'x-github-delivery'),
        dedup: 'body',
      };
    },
  };
}
