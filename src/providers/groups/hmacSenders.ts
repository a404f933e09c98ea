/**
 * Group A of the providers added with issue 15 part B (HMAC senders, shared tokens, the named
 * Standard Webhooks senders): one file each in `src/providers/`, re-exported here so that
 * `index.ts` lists the whole group in one line. The body-HMAC senders whose declaration is data
 * alone are rows of one table (`bodyHmacSenders.ts`).
 */
export { type AdyenEvent, type AdyenEventMap, type AdyenOptions, adyen } from '../adyen.js';
export { type AirtableEvent, type AirtableOptions, airtable } from '../airtable.js';
export { type BitbucketEvent, type BitbucketOptions, bitbucket } from '../bitbucket.js';
export { type BoxEvent, type BoxOptions, box } from '../box.js';
export { type CalComEvent, type CalComOptions, calCom } from '../calCom.js';
export { type CalendlyEvent, type CalendlyOptions, calendly } from '../calendly.js';
export { type CheckoutComEvent, type CheckoutComOptions, checkoutCom } from '../checkoutCom.js';
export { type ClerkEvent, type ClerkOptions, clerk } from '../clerk.js';
export {
  type CoinbaseCommerceEvent,
  type CoinbaseCommerceOptions,
  coinbaseCommerce,
} from '../coinbaseCommerce.js';
export { type GitlabEvent, type GitlabOptions, gitlab } from '../gitlab.js';
export { type HubspotEvent, type HubspotOptions, hubspot } from '../hubspot.js';
export { type JiraEvent, type JiraOptions, jira } from '../jira.js';
export { type LiveblocksEvent, type LiveblocksOptions, liveblocks } from '../liveblocks.js';
export { type LobEvent, type LobOptions, lob } from '../lob.js';
export { type MuxEvent, type MuxOptions, mux } from '../mux.js';
export { type NetlifyEvent, type NetlifyOptions, netlify } from '../netlify.js';
export { type NotionEvent, type NotionOptions, notion } from '../notion.js';
export { type PersonaEvent, type PersonaOptions, persona } from '../persona.js';
export { type PolarEvent, type PolarOptions, polar } from '../polar.js';
export { type PostmarkEvent, type PostmarkOptions, postmark } from '../postmark.js';
export { type RazorpayEvent, type RazorpayOptions, razorpay } from '../razorpay.js';
export { type ResendEvent, type ResendOptions, resend } from '../resend.js';
export { type SegmentEvent, type SegmentOptions, segment } from '../segment.js';
export { type SentryEvent, type SentryOptions, sentry } from '../sentry.js';
export { type TelegramEvent, type TelegramEventMap, type TelegramOptions, telegram } from '../telegram.js';
export { type TypeformEvent, type TypeformOptions, typeform } from '../typeform.js';
export { type VercelEvent, type VercelOptions, vercel } from '../vercel.js';
export { type WoocommerceEvent, type WoocommerceOptions, woocommerce } from '../woocommerce.js';
export { type ZendeskEvent, type ZendeskOptions, zendesk } from '../zendesk.js';
