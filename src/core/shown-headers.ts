/**
 * Which stored request headers are shown with their values (`onceonly inbox show`, and anything else
 * that shows what a delivery carried): an allow-list, never a block-list. A header not on it is shown
 * by name, its value replaced by its length, whatever it is called: a provider's credential header
 * (Okta's `x-okta-hook-auth`, the shared secret in clear; PayPal's `paypal-transmission-sig`;
 * Plaid's `plaid-verification`), a cookie, a bearer token or a header no one thought of. The list
 * holds what describes a delivery without vouching for it: content metadata, the client, and the
 * senders' own event id, type, time and delivery headers. No signature, token or credential header
 * of any sender is on it (a test checks every provider's).
 */
const SHOWN = new Set([
  // Which receiver accepted the entry (its provider's non-secret identity: see receiver/accepted-by.ts).
  ':onceonly-accepted-by',
  // Content and client.
  'content-type',
  'content-length',
  'content-encoding',
  'user-agent',
  'accept',
  'accept-encoding',
  'date',
  // Event ids, types, times and delivery ids the senders send beside their signatures.
  'x-github-event',
  'x-github-delivery',
  'x-github-hook-id',
  'x-github-hook-installation-target-id',
  'x-github-hook-installation-target-type',
  'x-gitlab-event',
  'x-gitlab-event-uuid',
  'x-gitlab-webhook-uuid',
  'x-gitlab-instance',
  'x-event-key',
  'x-request-uuid',
  'x-hook-uuid',
  'x-shopify-topic',
  'x-shopify-webhook-id',
  'x-shopify-event-id',
  'x-shopify-shop-domain',
  'x-shopify-api-version',
  'x-shopify-triggered-at',
  'webhook-id',
  'webhook-timestamp',
  'svix-id',
  'svix-timestamp',
  'x-netlify-event',
  'linear-delivery',
  'linear-event',
  'x-slack-request-timestamp',
  'x-slack-retry-num',
  'x-slack-retry-reason',
  'twitch-eventsub-message-id',
  'twitch-eventsub-message-type',
  'twitch-eventsub-message-timestamp',
  'twitch-eventsub-message-retry',
  'twitch-eventsub-subscription-type',
  'twitch-eventsub-subscription-version',
  'x-amz-sns-message-type',
  'x-amz-sns-message-id',
  'x-amz-sns-topic-arn',
  'x-amz-sns-subscription-arn',
  'paypal-transmission-id',
  'paypal-transmission-time',
  'paypal-auth-algo',
  'paypal-cert-url',
  'x-razorpay-event-id',
  'x-wc-webhook-topic',
  'x-wc-webhook-resource',
  'x-wc-webhook-event',
  'x-wc-webhook-id',
  'x-wc-webhook-delivery-id',
  'x-atlassian-webhook-identifier',
  'sentry-hook-resource',
  'sentry-hook-timestamp',
  'x-zm-request-timestamp',
  'box-delivery-id',
  'box-delivery-timestamp',
  'x-hubspot-request-timestamp',
  'x-zendesk-webhook-id',
  'x-zendesk-webhook-invocation-id',
  'x-zendesk-webhook-signature-timestamp',
  'lob-signature-timestamp',
  'x-signature-timestamp',
  'x-twilio-email-event-webhook-timestamp',
]);

/** Whether a header's value is shown (its name, lower case, is on the allow-list). */
export function isShownHeader(name: string): boolean {
  return SHOWN.has(name.toLowerCase());
}

/** A stored header's value as shown: itself when allowed, else only its length. */
export function shownHeaderValue(name: string, value: string): string {
  return isShownHeader(name) ? value : `(${value.length} characters)`;
}

/**
 * A stored delivery's URL as shown: scheme, host and path, with any user and password and every
 * query value replaced by its length (a URL can carry a token: `?token=...`, `user:pass@`).
 */
export function shownUrl(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `(${url.length} characters)`;
  }
  const credentials = parsed.username !== '' || parsed.password !== '' ? '(credentials hidden)@' : '';
  const query = [...parsed.searchParams].map(([name, value]) => `${name}=(${value.length} characters)`);
  return `${parsed.protocol}//${credentials}${parsed.host}${parsed.pathname}${query.length > 0 ? `?${query.join('&')}` : ''}`;
}
