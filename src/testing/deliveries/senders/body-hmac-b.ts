/**
 * Body-HMAC senders (second half): Meta, Netlify (a JWS binding the body), Notion, Razorpay, Segment
 * and Sentry here; Shopify, Square, Typeform, Vercel and WooCommerce in body-hmac-b-2.ts.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { SenderName } from '../names.js';
import { bodyHmac, hmac, randomHex, uuid } from '../sign.js';
import type { SampleContext, SenderRow } from '../types.js';
import { alnum, digits, rows as more } from './body-hmac-b-2.js';

const b64url = (text: string) => Buffer.from(text).toString('base64url');

// --- Meta -------------------------------------------------------------------------------------

/** WhatsApp Cloud API: an inbound text message (the `messages` field of the business account). */
const whatsapp = ({ id, seconds }: SampleContext) => ({
  object: 'whatsapp_business_account',
  entry: [
    {
      id: '102290129340398',
      changes: [
        {
          value: {
            messaging_product: 'whatsapp',
            metadata: { display_phone_number: '15550783881', phone_number_id: '106540352242922' },
            contacts: [{ profile: { name: 'Sheena Nelson' }, wa_id: '16505551234' }],
            messages: [
              {
                from: '16505551234',
                id: `wamid.${id}`,
                timestamp: String(seconds),
                type: 'text',
                text: { body: 'Does it come in another color?' },
              },
            ],
          },
          field: 'messages',
        },
      ],
    },
  ],
});

/** Messenger (`page`) and Instagram messaging: one message in `entry[].messaging`. */
const messaging =
  (object: 'page' | 'instagram', mid: (id: string) => string, text: string) =>
  ({ id, at }: SampleContext) => ({
    object,
    entry: [
      {
        id: object === 'page' ? '106540352242922' : '17841405822304914',
        time: at.getTime(),
        messaging: [
          {
            sender: { id: digits(16) },
            recipient: { id: object === 'page' ? '106540352242922' : '17841405822304914' },
            timestamp: at.getTime(),
            message: { mid: mid(id), text },
          },
        ],
      },
    ],
  });

// --- Netlify ----------------------------------------------------------------------------------

/** A deploy as Netlify's outgoing webhook sends it (its id the deploy's, 24 hex digits). */
const deploy =
  (state: string, extra: Record<string, unknown> = {}) =>
  ({ id, iso }: SampleContext) => ({
    id,
    site_id: '0d3a9d2f-ef94-4380-93df-27ee400e2048',
    build_id: randomHex(24),
    state,
    name: 'hello-world',
    url: 'https://hello-world.netlify.app',
    ssl_url: 'https://hello-world.netlify.app',
    admin_url: 'https://app.netlify.com/sites/hello-world',
    deploy_url: `http://${id}--hello-world.netlify.app`,
    deploy_ssl_url: `https://${id}--hello-world.netlify.app`,
    created_at: iso,
    updated_at: iso,
    user_id: '5ace049efdd72a6b9aa9539c',
    error_message: null,
    commit_ref: randomHex(40),
    branch: 'main',
    context: 'production',
    title: 'Update README.md',
    ...extra,
  });

// --- Notion -----------------------------------------------------------------------------------

/** A fresh Notion verification token: `secret_` and 43 letters and digits. */
const notionToken = () => `secret_${alnum(43)}`;

const notionEvent =
  (type: string, parts: () => { entity: Record<string, unknown>; data: Record<string, unknown> }) =>
  ({ id, iso }: SampleContext) => ({
    id,
    timestamp: iso,
    workspace_id: '13950b26-c203-4f3b-b97d-93ec06319565',
    workspace_name: 'Acme',
    subscription_id: '29d75c0d-5546-4414-8459-7b7a92f1fc4b',
    integration_id: '0ef2f5d2-a5ab-4f3e-9d9b-4e5b6e2e8c34',
    authors: [{ id: 'c7c11cca-1d73-471d-9b6e-bdef51470190', type: 'person' }],
    attempt_number: 1,
    api_version: '2025-09-03',
    type,
    ...parts(),
  });

// --- Razorpay ---------------------------------------------------------------------------------

const razorpayPayment = (seconds: number, status: 'captured' | 'failed') => ({
  id: `pay_${alnum(14)}`,
  entity: 'payment',
  amount: 50000,
  currency: 'INR',
  status,
  order_id: `order_${alnum(14)}`,
  invoice_id: null,
  international: false,
  method: 'upi',
  amount_refunded: 0,
  refund_status: null,
  captured: status === 'captured',
  description: 'Order #1001',
  email: 'gaurav.kumar@example.com',
  contact: '+919000090000',
  notes: [],
  fee: status === 'captured' ? 1180 : null,
  tax: status === 'captured' ? 180 : null,
  error_code: status === 'failed' ? 'BAD_REQUEST_ERROR' : null,
  error_description: status === 'failed' ? 'Payment was cancelled by the customer' : null,
  created_at: seconds - 7,
});

const razorpayEvent =
  (event: string, payload: (seconds: number) => Record<string, unknown>) =>
  ({ seconds }: SampleContext) => {
    const parts = payload(seconds);
    return {
      entity: 'event',
      account_id: 'acc_BFQ7uQEaa7j2z7',
      event,
      contains: Object.keys(parts),
      payload: parts,
      created_at: seconds,
    };
  };

// --- Segment ----------------------------------------------------------------------------------

const segmentContext = {
  library: { name: 'analytics.js', version: 'next-1.70.0' },
  ip: '203.0.113.7',
  userAgent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15',
  page: { path: '/checkout', url: 'https://shop.example.com/checkout', title: 'Checkout' },
};

const segmentMessage =
  (type: string, fields: Record<string, unknown>) =>
  ({ id, iso }: SampleContext) => ({
    anonymousId: uuid(),
    context: segmentContext,
    integrations: {},
    messageId: id,
    originalTimestamp: iso,
    receivedAt: iso,
    sentAt: iso,
    timestamp: iso,
    type,
    userId: `user_${alnum(10)}`,
    ...fields,
  });

// --- Sentry -----------------------------------------------------------------------------------

const sentryProject = { id: '1', name: 'web', slug: 'web', platform: 'javascript' };

const sentryIssue = (iso: string) => {
  const id = digits(10);
  return {
    id,
    shortId: 'WEB-3F',
    title: "TypeError: Cannot read properties of undefined (reading 'id')",
    culprit: 'app/checkout in submit',
    level: 'error',
    status: 'unresolved',
    platform: 'javascript',
    project: sentryProject,
    type: 'error',
    metadata: { type: 'TypeError', value: "Cannot read properties of undefined (reading 'id')" },
    count: '1',
    userCount: 1,
    firstSeen: iso,
    lastSeen: iso,
    url: `https://sentry.io/api/0/organizations/acme/issues/${id}/`,
    web_url: `https://acme.sentry.io/issues/${id}/`,
  };
};

const sentryInstallation = { uuid: 'a8e5d37a-696c-4c54-adb5-b3f28d64c7de' };
const sentryActor = { type: 'application', id: 'sentry', name: 'Sentry' };

const firstRows: readonly (SenderRow & { readonly name: SenderName })[] = [
  {
    name: 'meta',
    credential: 'secret',
    // The app secret (App settings → Basic): 32 hex digits.
    newSecret: () => randomHex(32),
    // Meta sends no delivery id: the kit's id is the message's, inside the entry (dedup is on the body).
    newId: () => randomBytes(27).toString('base64url'),
    samples: {
      whatsapp_business_account: whatsapp,
      page: messaging('page', (id) => `m_${id}`, 'hello, world!'),
      instagram: messaging('instagram', (id) => `aWdf${id}`, 'Is this still available?'),
    },
    // X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body, keyed with the app secret>; Meta
    // still sends the SHA-1 one beside it.
    sign: bodyHmac({
      header: 'x-hub-signature-256',
      encoding: 'hex',
      prefix: 'sha256=',
      headers: ({ secret, body }) => ({
        'x-hub-signature': `sha1=${hmac('sha1', secret, [body], 'hex')}`,
        'user-agent': 'facebookexternalua',
      }),
    }),
    handshakeNeedsSecret: true,
    // The subscription check: GET <url>?hub.mode=subscribe&hub.challenge=<c>&hub.verify_token=<t>,
    // answered with <c>. Unsigned: `secret` here is the verify token typed into the webhook settings
    // (the provider's `verifyToken`), not the app secret.
    handshake: ({ secret, challenge, url }) => {
      const check = new URL(url);
      check.searchParams.set('hub.mode', 'subscribe');
      check.searchParams.set('hub.challenge', challenge);
      check.searchParams.set('hub.verify_token', secret);
      return {
        method: 'GET',
        url: check.toString(),
        headers: { 'user-agent': 'facebookplatform/1.0 (+http://developers.facebook.com)' },
        challenge,
      };
    },
  },
  {
    name: 'netlify',
    credential: 'secret',
    // The JWS secret token typed into the notification's settings.
    newSecret: () => randomHex(32),
    newId: () => randomHex(24),
    samples: {
      deploy_created: deploy('ready', { deploy_time: 42 }),
      deploy_building: deploy('building'),
      deploy_failed: deploy('error', { error_message: 'Build script returned non-zero exit code: 2' }),
    },
    // X-Webhook-Signature: a JWS (HS256) made with the secret token, claims { iss: 'netlify',
    // sha256: hex SHA-256 of the body }; X-Netlify-Event names the event, unsigned.
    sign: ({ secret, body, type }) => {
      const head = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
      const claims = b64url(
        JSON.stringify({ iss: 'netlify', sha256: createHash('sha256').update(body).digest('hex') }),
      );
      const data = `${head}.${claims}`;
      return {
        headers: {
          'x-webhook-signature': `${data}.${hmac('sha256', secret, [data], 'base64url')}`,
          'x-netlify-event': type,
          'user-agent': 'Netlify',
        },
      };
    },
  },
  {
    name: 'notion',
    credential: 'secret',
    // The subscription's verification_token signs every event.
    newSecret: notionToken,
    newId: uuid,
    samples: {
      'page.created': notionEvent('page.created', () => ({
        entity: { id: uuid(), type: 'page' },
        data: { parent: { id: '13950b26-c203-4f3b-b97d-93ec06319565', type: 'space' } },
      })),
      'page.content_updated': notionEvent('page.content_updated', () => ({
        entity: { id: uuid(), type: 'page' },
        data: {
          parent: { id: '13950b26-c203-4f3b-b97d-93ec06319565', type: 'space' },
          updated_blocks: [{ id: uuid(), type: 'block' }],
        },
      })),
      'comment.created': notionEvent('comment.created', () => {
        const page = uuid();
        return {
          entity: { id: uuid(), type: 'comment' },
          data: { parent: { id: page, type: 'page' }, page_id: page },
        };
      }),
    },
    // X-Notion-Signature: sha256=<hex HMAC-SHA256 of the body, keyed with the verification_token>.
    sign: bodyHmac({
      header: 'x-notion-signature',
      encoding: 'hex',
      prefix: 'sha256=',
      headers: () => ({ 'user-agent': 'notion-api' }),
    }),
    // Creating a subscription POSTs { verification_token } once, unsigned; it is answered 200 and
    // nothing is echoed. `secret` is that token (a fresh one when none is given).
    handshake: ({ secret }) => ({
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'notion-api' },
      body: JSON.stringify({ verification_token: secret === '' ? notionToken() : secret }),
    }),
  },
  {
    name: 'razorpay',
    credential: 'secret',
    // The secret typed in when the webhook was set up (Dashboard → Webhooks).
    newSecret: () => randomHex(32),
    // X-Razorpay-Event-Id: 14 letters and digits, the same on every retry (unsigned).
    newId: () => alnum(14),
    samples: {
      'payment.captured': razorpayEvent('payment.captured', (s) => ({
        payment: { entity: razorpayPayment(s, 'captured') },
      })),
      'payment.failed': razorpayEvent('payment.failed', (s) => ({
        payment: { entity: razorpayPayment(s, 'failed') },
      })),
      'order.paid': razorpayEvent('order.paid', (s) => {
        const payment = razorpayPayment(s, 'captured');
        return {
          payment: { entity: payment },
          order: {
            entity: {
              id: payment.order_id,
              entity: 'order',
              amount: 50000,
              amount_paid: 50000,
              amount_due: 0,
              currency: 'INR',
              receipt: 'rcptid_11',
              status: 'paid',
              attempts: 1,
              notes: [],
              created_at: s - 60,
            },
          },
        };
      }),
      'refund.processed': razorpayEvent('refund.processed', (s) => {
        const payment = { ...razorpayPayment(s, 'captured'), amount_refunded: 50000, refund_status: 'full' };
        return {
          refund: {
            entity: {
              id: `rfnd_${alnum(14)}`,
              entity: 'refund',
              amount: 50000,
              currency: 'INR',
              payment_id: payment.id,
              notes: [],
              receipt: null,
              status: 'processed',
              speed_processed: 'normal',
              speed_requested: 'normal',
              created_at: s,
            },
          },
          payment: { entity: payment },
        };
      }),
    },
    // X-Razorpay-Signature: <hex HMAC-SHA256 of the body>.
    sign: bodyHmac({
      header: 'x-razorpay-signature',
      encoding: 'hex',
      headers: ({ id }) => ({ 'x-razorpay-event-id': id, 'user-agent': 'Razorpay-Webhook/v1' }),
    }),
  },
  {
    name: 'segment',
    credential: 'secret',
    // The shared secret typed into the Webhooks destination's settings.
    newSecret: () => randomHex(32),
    // analytics.js's messageId.
    newId: () => `ajs-next-${randomHex(32)}`,
    samples: {
      track: segmentMessage('track', {
        event: 'Order Completed',
        properties: { order_id: randomHex(24), total: 27.5, revenue: 25, currency: 'USD' },
      }),
      identify: segmentMessage('identify', {
        traits: { email: 'peter@example.com', name: 'Peter Gibbons', plan: 'premium' },
      }),
      page: segmentMessage('page', {
        name: 'Checkout',
        properties: {
          path: '/checkout',
          referrer: 'https://shop.example.com/cart',
          title: 'Checkout',
          url: 'https://shop.example.com/checkout',
        },
      }),
    },
    // X-Signature: <hex HMAC-SHA1 of the body, keyed with the shared secret>.
    sign: bodyHmac({
      header: 'x-signature',
      encoding: 'hex',
      algorithm: 'sha1',
      headers: () => ({ 'user-agent': 'Segment.io/1.0' }),
    }),
  },
  {
    name: 'sentry',
    credential: 'secret',
    // The integration's client secret: 64 hex digits.
    newSecret: () => randomHex(64),
    // Request-ID (unsigned): a UUID.
    newId: uuid,
    // The type is the resource (Sentry-Hook-Resource).
    samples: {
      issue: ({ iso }) => ({
        action: 'created',
        installation: sentryInstallation,
        data: { issue: sentryIssue(iso) },
        actor: sentryActor,
      }),
      event_alert: ({ iso }) => {
        const issue = sentryIssue(iso);
        return {
          action: 'triggered',
          installation: sentryInstallation,
          data: {
            event: {
              event_id: randomHex(32),
              issue_id: issue.id,
              project: Number(sentryProject.id),
              title: issue.title,
              level: 'error',
              platform: 'javascript',
              datetime: iso,
              url: `https://sentry.io/api/0/projects/acme/web/events/${randomHex(32)}/`,
              issue_url: issue.url,
            },
            triggered_rule: 'Send a notification for new issues',
            issue_alert: { title: 'Send a notification for new issues', settings: [] },
          },
          actor: sentryActor,
        };
      },
      installation: ({ iso }) => ({
        action: 'created',
        installation: sentryInstallation,
        data: {
          installation: {
            app: { uuid: '64dd1a4b-56cb-4bcf-a9b4-2e0a38adc8fb', slug: 'acme-integration' },
            organization: { slug: 'acme' },
            uuid: uuid(),
            status: 'installed',
            code: randomHex(32),
            dateCreated: iso,
          },
        },
        actor: { type: 'user', id: digits(6), name: 'Jane Doe' },
      }),
    },
    // Sentry-Hook-Signature: <hex HMAC-SHA256 of the body, keyed with the client secret>; the
    // resource and timestamp headers are sent unsigned.
    sign: bodyHmac({
      header: 'sentry-hook-signature',
      encoding: 'hex',
      headers: ({ id, type, seconds }) => ({
        'request-id': id,
        'sentry-hook-resource': type,
        'sentry-hook-timestamp': seconds,
        'user-agent': 'sentry-integration',
      }),
    }),
  },
];

export const rows: readonly (SenderRow & { readonly name: SenderName })[] = [...firstRows, ...more];
