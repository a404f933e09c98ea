/**
 * Body-HMAC senders (second half, continued): Shopify, Square (URL + body), Typeform, Vercel and
 * WooCommerce; imported by body-hmac-b.ts. And the small id makers both files use.
 */
import { randomBytes } from 'node:crypto';
import type { SenderName } from '../names.js';
import { bodyHmac, hmac, randomHex, uuid } from '../sign.js';
import type { SampleContext, SenderRow } from '../types.js';

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `length` random letters and digits (Razorpay's and Vercel's ids, Notion's tokens). */
export function alnum(length: number): string {
  let out = '';
  for (const byte of randomBytes(length)) out += ALNUM[byte % ALNUM.length];
  return out;
}

/** `length` random decimal digits, the first not 0 (Meta's, Sentry's and WooCommerce's numeric ids). */
export function digits(length: number): string {
  let out = String(1 + (randomBytes(1)[0]! % 9));
  for (const byte of randomBytes(length - 1)) out += String(byte % 10);
  return out;
}

/** A ULID (Typeform's event ids): 10 characters of time, 16 random, Crockford base32. */
function ulid(): string {
  const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
  let time = Date.now();
  let head = '';
  for (let i = 0; i < 10; i++) {
    head = alphabet[time % 32] + head;
    time = Math.floor(time / 32);
  }
  let tail = '';
  for (const byte of randomBytes(16)) tail += alphabet[byte % 32];
  return head + tail;
}

// --- Shopify ----------------------------------------------------------------------------------

/** A Shopify REST id: 13 digits, within a double's exact range. */
const shopifyId = () => Number(digits(13));
const SHOP = 'example.myshopify.com';
const customer = () => ({
  id: shopifyId(),
  email: 'russel.winfield@example.com',
  first_name: 'Russell',
  last_name: 'Winfield',
  state: 'enabled',
  currency: 'USD',
});

const order =
  (financial: 'pending' | 'paid') =>
  ({ iso }: SampleContext) => {
    const id = shopifyId();
    return {
      id,
      admin_graphql_api_id: `gid://shopify/Order/${id}`,
      name: `#${digits(4)}`,
      order_number: Number(digits(4)),
      email: 'russel.winfield@example.com',
      created_at: iso,
      updated_at: iso,
      processed_at: iso,
      currency: 'USD',
      financial_status: financial,
      fulfillment_status: null,
      subtotal_price: '199.00',
      total_tax: '0.00',
      total_price: '199.00',
      test: false,
      customer: customer(),
      line_items: [
        {
          id: shopifyId(),
          product_id: shopifyId(),
          variant_id: shopifyId(),
          title: 'IPod Nano - 8gb',
          quantity: 1,
          price: '199.00',
          sku: 'IPOD2008PINK',
        },
      ],
    };
  };

// --- Square -----------------------------------------------------------------------------------

const SQUARE_MERCHANT = '6SSW7HV8K2ST5';
const SQUARE_LOCATION = 'S8GWD5R9QB376';
/** A Square object id: 29 letters and digits. */
const squareId = () => alnum(29);

const squareEvent =
  (type: string, object: (iso: string) => { type: string; id: string; object: Record<string, unknown> }) =>
  ({ id, iso }: SampleContext) => ({
    merchant_id: SQUARE_MERCHANT,
    type,
    event_id: id,
    created_at: iso,
    data: object(iso),
  });

const squarePayment = (iso: string, status: 'APPROVED' | 'COMPLETED', version: number) => {
  const id = squareId();
  return {
    type: 'payment',
    id,
    object: {
      payment: {
        id,
        created_at: iso,
        updated_at: iso,
        amount_money: { amount: 1000, currency: 'USD' },
        total_money: { amount: 1000, currency: 'USD' },
        status,
        source_type: 'CARD',
        card_details: { status: status === 'APPROVED' ? 'AUTHORIZED' : 'CAPTURED', entry_method: 'KEYED' },
        location_id: SQUARE_LOCATION,
        order_id: squareId(),
        receipt_number: id.slice(0, 4),
        version,
      },
    },
  };
};

// --- Typeform ---------------------------------------------------------------------------------

const typeformResponse =
  (eventType: 'form_response' | 'form_response_partial') =>
  ({ id, iso }: SampleContext) => ({
    event_id: id,
    event_type: eventType,
    form_response: {
      form_id: 'lT4Z3j',
      token: randomHex(32),
      landed_at: iso,
      ...(eventType === 'form_response' ? { submitted_at: iso } : {}),
      hidden: {},
      calculated: { score: 9 },
      definition: {
        id: 'lT4Z3j',
        title: 'Webhooks example',
        fields: [
          {
            id: 'DlXFaesGBpoF',
            ref: 'where_you_live',
            type: 'long_text',
            title: "What's it like where you live?",
          },
          { id: 'SMEUb7VJz92Q', ref: 'email', type: 'email', title: 'Your email?' },
        ],
      },
      answers: [
        {
          type: 'text',
          text: "It's cold right now! I live in an older medium-sized city with a university.",
          field: { id: 'DlXFaesGBpoF', type: 'long_text', ref: 'where_you_live' },
        },
        ...(eventType === 'form_response'
          ? [{ type: 'email', email: 'laura@example.com', field: { id: 'SMEUb7VJz92Q', type: 'email' } }]
          : []),
      ],
    },
  });

// --- Vercel -----------------------------------------------------------------------------------

const vercelEvent =
  (type: string, payload: () => Record<string, unknown>) =>
  ({ id, at }: SampleContext) => ({
    id,
    type,
    createdAt: at.getTime(),
    payload: {
      team: { id: 'team_4FWx5KQoszRi0ZmM9q9IBoKG' },
      user: { id: 'zTuNVUXEAvvnNN3IaqinkyMw' },
      ...payload(),
    },
    region: 'iad1',
  });

const vercelDeployment = (target: string | null) => () => {
  const id = `dpl_${alnum(28)}`;
  return {
    deployment: {
      id,
      name: 'my-app',
      url: `my-app-${alnum(9).toLowerCase()}-acme.vercel.app`,
      inspectorUrl: `https://vercel.com/acme/my-app/${id.slice(4)}`,
      meta: { githubCommitRef: 'main', githubCommitSha: randomHex(40) },
    },
    links: {
      deployment: `https://vercel.com/acme/my-app/${id.slice(4)}`,
      project: 'https://vercel.com/acme/my-app',
    },
    name: 'my-app',
    plan: 'pro',
    project: { id: 'prj_ndlgr43fadlPyCtREAqxxdyFK' },
    regions: ['iad1'],
    target,
    type: 'LAMBDAS',
    url: 'my-app-acme.vercel.app',
  };
};

// --- WooCommerce ------------------------------------------------------------------------------

const wooDate = (iso: string) => iso.slice(0, 19);

const wooOrder =
  (status: 'processing' | 'completed') =>
  ({ iso }: SampleContext) => ({
    id: Number(digits(4)),
    parent_id: 0,
    status,
    currency: 'USD',
    version: '9.8.5',
    prices_include_tax: false,
    date_created: wooDate(iso),
    date_created_gmt: wooDate(iso),
    date_modified: wooDate(iso),
    date_modified_gmt: wooDate(iso),
    discount_total: '0.00',
    shipping_total: '10.00',
    total: '29.35',
    total_tax: '1.35',
    customer_id: 0,
    order_key: `wc_order_${alnum(13)}`,
    billing: { first_name: 'John', last_name: 'Doe', email: 'john.doe@example.com', country: 'US' },
    payment_method: 'bacs',
    payment_method_title: 'Direct Bank Transfer',
    customer_note: '',
    date_paid: status === 'completed' ? wooDate(iso) : null,
    line_items: [
      {
        id: Number(digits(3)),
        name: 'Woo Single #1',
        product_id: 93,
        quantity: 2,
        subtotal: '6.00',
        total: '6.00',
      },
    ],
  });

export const rows: readonly (SenderRow & { readonly name: SenderName })[] = [
  {
    name: 'shopify',
    credential: 'secret',
    // The app's client secret (Partner Dashboard → App setup): `shpss_` and 32 hex digits.
    newSecret: () => `shpss_${randomHex(32)}`,
    // X-Shopify-Event-Id (unsigned): a UUID, the same for every webhook of one event.
    newId: uuid,
    samples: {
      'orders/create': order('pending'),
      'orders/paid': order('paid'),
      'products/update': ({ iso }) => {
        const id = shopifyId();
        return {
          id,
          admin_graphql_api_id: `gid://shopify/Product/${id}`,
          title: 'IPod Nano - 8gb',
          body_html: '<p>It is the small iPod with one very big idea.</p>',
          vendor: 'Apple',
          product_type: 'Cult Products',
          handle: 'ipod-nano',
          status: 'active',
          created_at: iso,
          updated_at: iso,
          variants: [
            { id: shopifyId(), product_id: id, title: 'Pink', price: '199.00', sku: 'IPOD2008PINK' },
          ],
        };
      },
      'customers/create': ({ iso }) => ({ ...customer(), created_at: iso, updated_at: iso }),
    },
    // X-Shopify-Hmac-Sha256: <base64 HMAC-SHA256 of the body, keyed with the client secret>; the
    // topic, shop, API version and the ids travel unsigned.
    sign: bodyHmac({
      header: 'x-shopify-hmac-sha256',
      encoding: 'base64',
      headers: ({ id, type, at }) => ({
        'x-shopify-topic': type,
        'x-shopify-shop-domain': SHOP,
        'x-shopify-api-version': '2025-01',
        'x-shopify-webhook-id': uuid(),
        'x-shopify-event-id': id,
        'x-shopify-triggered-at': at.toISOString(),
        'user-agent': 'Shopify-Captain-Hook',
      }),
    }),
  },
  {
    name: 'square',
    credential: 'secret',
    // The subscription's signature key: 22 base64url characters.
    newSecret: () => randomBytes(16).toString('base64url'),
    providerOptions: ({ secret, url }) => ({ secret, notificationUrl: url }),
    newId: uuid,
    samples: {
      'payment.created': squareEvent('payment.created', (iso) => squarePayment(iso, 'APPROVED', 0)),
      'payment.updated': squareEvent('payment.updated', (iso) => squarePayment(iso, 'COMPLETED', 1)),
      'refund.created': squareEvent('refund.created', (iso) => {
        const id = `${squareId()}_${alnum(12)}`;
        return {
          type: 'refund',
          id,
          object: {
            refund: {
              id,
              payment_id: squareId(),
              order_id: squareId(),
              location_id: SQUARE_LOCATION,
              amount_money: { amount: 500, currency: 'USD' },
              reason: 'Returned item',
              status: 'PENDING',
              created_at: iso,
              updated_at: iso,
              version: 0,
            },
          },
        };
      }),
      'order.created': squareEvent('order.created', (iso) => {
        const id = squareId();
        return {
          type: 'order_created',
          id,
          object: {
            order_created: {
              order_id: id,
              location_id: SQUARE_LOCATION,
              state: 'OPEN',
              version: 1,
              created_at: iso,
            },
          },
        };
      }),
    },
    // x-square-hmacsha256-signature: <base64 HMAC-SHA256 of notification URL + body>; the legacy
    // x-square-signature (HMAC-SHA1 of the same) beside it.
    sign: bodyHmac({
      header: 'x-square-hmacsha256-signature',
      encoding: 'base64',
      signed: ({ url, body }) => [url, body],
      headers: ({ secret, url, body, at }) => ({
        'x-square-signature': hmac('sha1', secret, [url, body], 'base64'),
        'square-environment': 'Sandbox',
        'square-initial-delivery-timestamp': at.toISOString(),
        'square-retry-number': '0',
        'user-agent': 'Square Connect v2',
      }),
    }),
  },
  {
    name: 'typeform',
    credential: 'secret',
    // The secret typed into the webhook's settings.
    newSecret: () => randomBytes(24).toString('base64url'),
    newId: ulid,
    samples: {
      form_response: typeformResponse('form_response'),
      form_response_partial: typeformResponse('form_response_partial'),
    },
    // Typeform-Signature: sha256=<base64 HMAC-SHA256 of the body>.
    sign: bodyHmac({
      header: 'typeform-signature',
      encoding: 'base64',
      prefix: 'sha256=',
      headers: () => ({ 'user-agent': 'Typeform Webhooks' }),
    }),
  },
  {
    name: 'vercel',
    credential: 'secret',
    // The webhook's secret, shown once when it is created: 24 letters and digits.
    newSecret: () => alnum(24),
    newId: () => alnum(24),
    samples: {
      'deployment.created': vercelEvent('deployment.created', vercelDeployment('production')),
      'deployment.succeeded': vercelEvent('deployment.succeeded', vercelDeployment('production')),
      'deployment.error': vercelEvent('deployment.error', vercelDeployment(null)),
      'project.created': vercelEvent('project.created', () => ({
        project: { id: `prj_${alnum(28)}`, name: 'my-new-app' },
      })),
    },
    // x-vercel-signature: <hex HMAC-SHA1 of the body>.
    sign: bodyHmac({
      header: 'x-vercel-signature',
      encoding: 'hex',
      algorithm: 'sha1',
      headers: () => ({ 'user-agent': 'Vercel Webhooks' }),
    }),
  },
  {
    name: 'woocommerce',
    credential: 'secret',
    // WooCommerce fills the secret field with a random 50-character password.
    newSecret: () => alnum(50),
    // X-WC-Webhook-Delivery-ID (unsigned): a 32-hex-digit hash, new for each delivery.
    newId: () => randomHex(32),
    samples: {
      'order.created': wooOrder('processing'),
      'order.updated': wooOrder('completed'),
      'product.created': ({ iso }) => ({
        id: Number(digits(3)),
        name: 'Premium Quality',
        slug: 'premium-quality',
        type: 'simple',
        status: 'publish',
        date_created: wooDate(iso),
        date_created_gmt: wooDate(iso),
        regular_price: '21.99',
        price: '21.99',
        sku: `PQ-${alnum(6)}`,
        stock_status: 'instock',
      }),
      'customer.created': ({ iso }) => ({
        id: Number(digits(2)),
        date_created: wooDate(iso),
        date_created_gmt: wooDate(iso),
        email: 'john.doe@example.com',
        first_name: 'John',
        last_name: 'Doe',
        role: 'customer',
        username: 'john.doe',
      }),
    },
    // X-WC-Webhook-Signature: <base64 HMAC-SHA256 of the body>; topic, resource, event, webhook
    // and delivery ids travel unsigned.
    sign: bodyHmac({
      header: 'x-wc-webhook-signature',
      encoding: 'base64',
      headers: ({ id, type }) => ({
        'x-wc-webhook-source': 'https://shop.example.com/',
        'x-wc-webhook-topic': type,
        'x-wc-webhook-resource': type.split('.')[0]!,
        'x-wc-webhook-event': type.split('.')[1] ?? '',
        'x-wc-webhook-id': '12',
        'x-wc-webhook-delivery-id': id,
        'user-agent': 'WooCommerce/9.8.5 Hookshot (WordPress/6.8.1)',
      }),
    }),
    // Saving a webhook POSTs the unsigned form `webhook_id=<n>` and activates it only on a 2xx.
    handshake: () => ({
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'user-agent': 'WooCommerce/9.8.5 Hookshot (WordPress/6.8.1)',
      },
      body: 'webhook_id=12',
    }),
  },
];
