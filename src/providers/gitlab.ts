import type { Duration } from '../core/duration.js';
import { token } from './families/token.js';
import type { SecretInput } from './shared.js';
import type { AuthenticatingProvider } from './types.js';

/**
 * A GitLab webhook payload: `object_kind` (`push`, `merge_request`...) and the event's fields. For
 * typed payloads, pass a map of `X-Gitlab-Event` names to `@gitbeaker/core`'s schemas (see
 * {@link gitlab}).
 */
export interface GitlabEvent {
  object_kind?: string;
  event_name?: string;
  [field: string]: unknown;
}

export interface GitlabOptions {
  /**
   * The webhook's secret token (Settings → Webhooks → Secret token); an array while rotating.
   * @example process.env.GITLAB_WEBHOOK_TOKEN!
   */
  secret: SecretInput;
  /**
   * How long a completed delivery's digest is remembered. GitLab retries a failed delivery only when
   * you resend it by hand, and the token vouches for no body, so this is the window in which a
   * replayed body is caught; the 3-day default for unknown windows.
   * @default '3d'
   */
  retention?: Duration;
}

const declaration = token({
  name: 'gitlab',
  retention: '3d',
  secret: {
    lookalikes: [
      ['glpat-', 'a personal, project or group access token'],
      ['gldt-', 'a deploy token'],
      ['glptt-', 'a pipeline trigger token'],
      ['glrt-', 'a runner authentication token'],
      ['gloas-', 'an OAuth application secret'],
    ],
    expected: "the webhook's secret token (Settings → Webhooks)",
  },
  token: { header: 'x-gitlab-token' },
  event: {
    // Neither header is covered by anything: the body digest is the key.
    id: { header: ['x-gitlab-event-uuid', 'x-gitlab-webhook-uuid'], signed: false },
    type: { header: 'x-gitlab-event' },
    typeSigned: false,
  },
});

/**
 * GitLab: the webhook's secret token sent as it is in `X-Gitlab-Token`, compared in constant time.
 * It vouches for the sender, not for the body: whoever sees one delivery's headers can send any
 * body. `X-Gitlab-Event` (`Push Hook`) is the type and `X-Gitlab-Event-UUID` the id, both
 * unprotected, so dedup keys on a digest of the body.
 *
 * @example
 * createReceiver({ provider: gitlab({ secret: process.env.GITLAB_WEBHOOK_TOKEN! }), store, on: { 'Push Hook': deploy } });
 *
 * For typed handlers, pass a map from the `X-Gitlab-Event` names you subscribe to onto the payload
 * schemas `@gitbeaker/core` publishes (types only), as GitHub takes `WebhookEventMap`:
 *
 * @example
 * import type { WebhookMergeRequestEventSchema, WebhookPushEventSchema } from '@gitbeaker/core';
 * type GitlabEvents = { 'Push Hook': WebhookPushEventSchema; 'Merge Request Hook': WebhookMergeRequestEventSchema };
 * createReceiver({
 *   provider: gitlab<GitlabEvents>({ secret: process.env.GITLAB_WEBHOOK_TOKEN! }),
 *   store,
 *   on: { 'Push Hook': ({ event }) => deploy(event.checkout_sha) },
 * });
 */
export function gitlab<M extends object = Record<string, GitlabEvent>>(
  options: GitlabOptions,
): AuthenticatingProvider<M[keyof M], { [K in keyof M & string]: M[K] }> {
  return declaration(options) as AuthenticatingProvider<M[keyof M], { [K in keyof M & string]: M[K] }>;
}
