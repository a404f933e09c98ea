/**
 * `onceonly/providers`: one file per provider, file name = export name, listed here in
 * alphabetical order (with `hmac`, the shared types and `standardWebhooks`, the generic senders).
 * The scheme families they are declared on live in `families/`.
 */
export { type AdyenEvent, type AdyenEventMap, type AdyenOptions, adyen } from './adyen.js';
export { type AirtableEvent, type AirtableOptions, airtable } from './airtable.js';
export { type AsanaEvent, type AsanaOptions, type AsanaSecretLookup, asana } from './asana.js';
export { type AwsSnsEvent, type AwsSnsOptions, awsSns } from './awsSns.js';
export { type BitbucketEvent, type BitbucketOptions, bitbucket } from './bitbucket.js';
export { type BoxEvent, type BoxOptions, box } from './box.js';
export { type CalComEvent, type CalComOptions, calCom } from './calCom.js';
export { type CalendlyEvent, type CalendlyOptions, calendly } from './calendly.js';
export { type CheckoutComEvent, type CheckoutComOptions, checkoutCom } from './checkoutCom.js';
export { type ClerkEvent, type ClerkOptions, clerk } from './clerk.js';
export {
  type CoinbaseCommerceEvent,
  type CoinbaseCommerceOptions,
  coinbaseCommerce,
} from './coinbaseCommerce.js';
export { type DiscordEvent, type DiscordOptions, discord } from './discord.js';
export { type DropboxEvent, type DropboxOptions, dropbox } from './dropbox.js';
export { type GithubEvent, type GithubOptions, github } from './github.js';
export { type GitlabEvent, type GitlabOptions, gitlab } from './gitlab.js';
export { type HmacOptions, hmac, type SignedContentInput } from './hmac.js';
export { type HubspotEvent, type HubspotOptions, hubspot } from './hubspot.js';
export { type IntercomEvent, type IntercomOptions, intercom } from './intercom.js';
export { type JiraEvent, type JiraOptions, jira } from './jira.js';
export { type LemonSqueezyEvent, type LemonSqueezyOptions, lemonSqueezy } from './lemonSqueezy.js';
export { type LinearEvent, type LinearOptions, linear } from './linear.js';
export { type LiveblocksEvent, type LiveblocksOptions, liveblocks } from './liveblocks.js';
export { type LobEvent, type LobOptions, lob } from './lob.js';
export { type MailgunEvent, type MailgunOptions, mailgun } from './mailgun.js';
export { type MetaEvent, type MetaOptions, meta } from './meta.js';
export { type MuxEvent, type MuxOptions, mux } from './mux.js';
export { type NetlifyEvent, type NetlifyOptions, netlify } from './netlify.js';
export { type NotionEvent, type NotionOptions, notion } from './notion.js';
export { type OktaEvent, type OktaOptions, okta } from './okta.js';
export { type PaddleEvent, type PaddleOptions, paddle } from './paddle.js';
export { type PaypalEvent, type PaypalOptions, paypal } from './paypal.js';
export { type PersonaEvent, type PersonaOptions, persona } from './persona.js';
export { type PlaidEvent, type PlaidFetch, type PlaidOptions, plaid } from './plaid.js';
export { type PolarEvent, type PolarOptions, polar } from './polar.js';
export { type PostmarkEvent, type PostmarkOptions, postmark } from './postmark.js';
export { type RazorpayEvent, type RazorpayOptions, razorpay } from './razorpay.js';
export { type ResendEvent, type ResendOptions, resend } from './resend.js';
export { type SegmentEvent, type SegmentOptions, segment } from './segment.js';
export { type SendgridEvent, type SendgridOptions, sendgrid } from './sendgrid.js';
export { type SentryEvent, type SentryOptions, sentry } from './sentry.js';
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
export { type TelegramEvent, type TelegramEventMap, type TelegramOptions, telegram } from './telegram.js';
export { type TwilioEvent, type TwilioOptions, twilio } from './twilio.js';
export { type TwitchEvent, type TwitchOptions, twitch } from './twitch.js';
export { type TypeformEvent, type TypeformOptions, typeform } from './typeform.js';
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
export { type VercelEvent, type VercelOptions, vercel } from './vercel.js';
export { type WoocommerceEvent, type WoocommerceOptions, woocommerce } from './woocommerce.js';
export { type ZendeskEvent, type ZendeskOptions, zendesk } from './zendesk.js';
export { type ZoomEvent, type ZoomOptions, zoom, zoomUrlValidation } from './zoom.js';
