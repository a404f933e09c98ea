import { type BodyHmacSenderOptions, bodyHmacSenders } from './families/bodyHmacSenders.js';
import type { AuthenticatingProvider } from './types.js';

/** A Jira webhook: `webhookEvent` (`jira:issue_created`...), `timestamp` (ms) and the event's data. */
export interface JiraEvent {
  webhookEvent: string;
  timestamp?: number;
  [field: string]: unknown;
}

/**
 * `secret`: the secret entered for the webhook (System → WebHooks, or the `secret` of a registered
 * webhook); an array while rotating. `retention` (default `'2d'`): how long a completed delivery's
 * digest is remembered. Jira Cloud retries a failed delivery up to 5 times with backoff; a captured
 * request verifies forever (no timestamp in the signature), so this is also the replay window. 2
 * days.
 */
export type JiraOptions = BodyHmacSenderOptions;

/**
 * Jira (Atlassian) webhooks with a secret: `X-Hub-Signature: sha256=<hex>` over the body,
 * HMAC-SHA256, following WebSub. The type is the body's `webhookEvent` (signed); the
 * `X-Atlassian-Webhook-Identifier` is unsigned, so dedup keys on a digest of the body.
 *
 * @example
 * createReceiver({ provider: jira({ secret: process.env.JIRA_WEBHOOK_SECRET! }), store, on: { 'jira:issue_created': onIssue } });
 */
export function jira<E = JiraEvent>(options: JiraOptions): AuthenticatingProvider<E> {
  return bodyHmacSenders.jira(options) as AuthenticatingProvider<E>;
}
