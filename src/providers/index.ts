/**
 * `onceonly/providers`: one file per provider, file name = export name.
 */
export { type DiscordEvent, type DiscordOptions, discord } from './discord.js';
export { type GithubEvent, type GithubOptions, github } from './github.js';
export { type HmacOptions, hmac, type SignedContentInput } from './hmac.js';
export { type IntercomEvent, type IntercomOptions, intercom } from './intercom.js';
export { type LemonSqueezyEvent, type LemonSqueezyOptions, lemonSqueezy } from './lemonSqueezy.js';
export { type LinearEvent, type LinearOptions, linear } from './linear.js';
export { type MailgunEvent, type MailgunOptions, mailgun } from './mailgun.js';
export { type PaddleEvent, type PaddleOptions, paddle } from './paddle.js';
export { type SendgridEvent, type SendgridOptions, sendgrid } from './sendgrid.js';
export type { EventMapOfUnion, SecretInput } from './shared.js';
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
  Provider,
  Verified,
} from './types.js';
export { type ZoomEvent, type ZoomOptions, zoom, zoomUrlValidation } from './zoom.js';
