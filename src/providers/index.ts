/**
 * `onceonly/providers`: one file per provider, file name = export name.
 */
export { type DiscordEvent, type DiscordOptions, discord } from './discord.js';
export { type GithubEvent, type GithubOptions, github } from './github.js';
// Group A (HMAC senders, issue 15 part B): GitLab, Bitbucket, Jira, Typeform... and the named
// Standard Webhooks senders, each in its own file, listed in one module.
export * from './groups/hmacSenders.js';
export { type HmacOptions, hmac, type SignedContentInput } from './hmac.js';
export { type IntercomEvent, type IntercomOptions, intercom } from './intercom.js';
export { type LemonSqueezyEvent, type LemonSqueezyOptions, lemonSqueezy } from './lemonSqueezy.js';
export { type LinearEvent, type LinearOptions, linear } from './linear.js';
export { type MailgunEvent, type MailgunOptions, mailgun } from './mailgun.js';
export { type PaddleEvent, type PaddleOptions, paddle } from './paddle.js';
export { type SendgridEvent, type SendgridOptions, sendgrid } from './sendgrid.js';
export type { EventMapByField, EventMapOfUnion, SecretInput } from './shared.js';
export { type ShopifyEvent, type ShopifyOptions, shopify } from './shopify.js';
export { type SlackEvent, type SlackOptions, slack } from './slack.js';
export { type SquareEvent, type SquareOptions, square } from './square.js';
export {
  type StandardWebhooksEvent,
  type StandardWebhooksEventMap,
  type StandardWebhooksOptions,
  standardWebhooks,
} from './standardWebhooks.js';
export { type StripeEvent, type StripeOptions, stripe } from './stripe.js';
export { type TwilioEvent, type TwilioOptions, twilio } from './twilio.js';
export type {
  AuthenticatingProvider,
  BatchItem,
  DeliveryInput,
  EventMapOf,
  EventOf,
  HandshakeAnswer,
  HandshakeRequest,
  Provider,
  Verified,
} from './types.js';
export { type ZoomEvent, type ZoomOptions, zoom, zoomUrlValidation } from './zoom.js';

// Group B, handshakes and fetched keys (issue 15): Meta, Twitch, Dropbox, Asana, Okta, AWS SNS, Plaid, PayPal.

export { type AsanaEvent, type AsanaOptions, type AsanaSecretLookup, asana } from './asana.js';
export { type AwsSnsEvent, type AwsSnsOptions, awsSns } from './awsSns.js';
export { type DropboxEvent, type DropboxOptions, dropbox } from './dropbox.js';
export { type MetaEvent, type MetaOptions, meta } from './meta.js';
export { type OktaEvent, type OktaOptions, okta } from './okta.js';
export { type PaypalEvent, type PaypalOptions, paypal } from './paypal.js';
export { type PlaidEvent, type PlaidFetch, type PlaidOptions, plaid } from './plaid.js';
export { type TwitchEvent, type TwitchOptions, twitch } from './twitch.js';
