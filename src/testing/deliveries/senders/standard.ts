/**
 * Standard Webhooks senders (Svix and those on it); the token senders and Twilio's form HMAC are in
 * standard-2.ts.
 */
import { randomBytes } from 'node:crypto';
import type { SenderName } from '../names.js';
import { hmac, randomHex, standardWebhooks, uuid } from '../sign.js';
import type { SampleContext, SenderRow, SignContext, Signed } from '../types.js';
import { rows as more } from './standard-2.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` random base62 characters, the tail of Svix's and Clerk's ids (KSUIDs). */
function base62(length: number): string {
  let out = '';
  for (const byte of randomBytes(length)) out += BASE62[byte % 62];
  return out;
}

/** A Svix message id: `msg_` and 27 base62 characters. */
const svixId = () => `msg_${base62(27)}`;

/** A Svix endpoint secret: `whsec_` and the base64 of 24 random bytes. */
const svixSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

/**
 * Polar's key for a secret: the base64 after `whsec_` for the secrets it makes since 2026-09-08
 * (`whsec_` + the base64 of 32 bytes, signed per the spec); the secret's own UTF-8 bytes for older
 * ones (`polar_whs_...`, and `whsec_` + a 43-character token), as Polar keeps signing those.
 */
function polarKey(secret: string): Buffer {
  const rest = secret.slice('whsec_'.length);
  return secret.startsWith('whsec_') && /^[A-Za-z0-9+/]{43}=$/.test(rest)
    ? Buffer.from(rest, 'base64')
    : Buffer.from(secret, 'utf8');
}

/** Polar's delivery: the Standard Webhooks headers (its message id a UUID), keyed as {@link polarKey}. */
function polarSign(ctx: SignContext): Signed {
  const signature = hmac('sha256', polarKey(ctx.secret), [`${ctx.id}.${ctx.seconds}.`, ctx.body], 'base64');
  return {
    headers: {
      'user-agent': 'polar.sh webhooks',
      'webhook-id': ctx.id,
      'webhook-timestamp': ctx.seconds,
      'webhook-signature': `v1,${signature}`,
    },
  };
}

/** A Clerk user object (Backend API `User`), as its user.* events carry it. */
function clerkUser(ms: number, id = `user_${base62(27)}`) {
  const email = `idn_${base62(27)}`;
  return {
    id,
    object: 'user',
    username: null,
    first_name: 'Example',
    last_name: 'Example',
    image_url: 'https://img.clerk.com/eyJ0eXBlIjoiZGVmYXVsdCJ9',
    has_image: false,
    primary_email_address_id: email,
    primary_phone_number_id: null,
    primary_web3_wallet_id: null,
    password_enabled: true,
    two_factor_enabled: false,
    email_addresses: [
      {
        id: email,
        object: 'email_address',
        email_address: 'example@example.org',
        linked_to: [],
        verification: { status: 'verified', strategy: 'ticket' },
      },
    ],
    phone_numbers: [],
    web3_wallets: [],
    external_accounts: [],
    external_id: null,
    public_metadata: {},
    private_metadata: {},
    unsafe_metadata: {},
    last_sign_in_at: ms,
    created_at: ms,
    updated_at: ms,
  };
}

/** Clerk's event envelope: `{ data, object: 'event', type, timestamp (ms), instance_id }`. */
const clerkEvent = (type: string, ms: number, data: Record<string, unknown>) => ({
  data,
  event_attributes: {
    http_request: { client_ip: '203.0.113.7', user_agent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7)' },
  },
  instance_id: 'ins_2ZgJkP9qBq3d1vX0Rg4ZkLm8Tn1',
  object: 'event',
  timestamp: ms,
  type,
});

/** A Resend email event of the sample's type: the email sent to `to`, with `more` of that event's fields. */
const resendEmail =
  (to: string, more: Record<string, unknown> = {}) =>
  ({ type, iso }: SampleContext) => ({
    type,
    created_at: iso,
    data: {
      created_at: iso,
      email_id: crypto.randomUUID(),
      from: 'Acme <onboarding@resend.dev>',
      to: [to],
      subject: 'Sending this example',
      ...more,
    },
  });

/** A Liveblocks event of the sample's type: `{ type, data }`, about the room `my-room-id` and `fields`. */
const liveblocksEvent =
  (fields: (iso: string) => Record<string, unknown>) =>
  ({ type, iso }: SampleContext) => ({
    type,
    data: { projectId: '605a50b01a36d5ea7a2e9104', roomId: 'my-room-id', ...fields(iso) },
  });

/** Who enters and leaves the room in the Liveblocks samples. */
const liveblocksVisitor = { connectionId: 7, userId: 'user-42', userInfo: { name: 'Charlie Layne' } };

/** A Polar customer (the `customer` of an order or subscription). */
const polarCustomer = (iso: string) => ({
  id: uuid(),
  created_at: iso,
  modified_at: null,
  metadata: {},
  external_id: null,
  email: 'customer@example.com',
  email_verified: true,
  name: 'Jane Doe',
  billing_address: { country: 'FR', line1: null, line2: null, postal_code: null, city: null, state: null },
  tax_id: null,
  organization_id: '1dbfc517-0bbf-4301-9ba8-555ca42b9737',
  deleted_at: null,
  avatar_url: null,
});

/** A Polar product (the `product` of an order or subscription). */
const polarProduct = (iso: string, id: string, recurring: boolean) => ({
  id,
  created_at: iso,
  modified_at: null,
  name: recurring ? 'Pro (monthly)' : 'Lifetime licence',
  description: null,
  recurring_interval: recurring ? 'month' : null,
  is_recurring: recurring,
  is_archived: false,
  organization_id: '1dbfc517-0bbf-4301-9ba8-555ca42b9737',
  metadata: {},
});

export const rows: readonly (SenderRow & { readonly name: SenderName })[] = [
  {
    name: 'standardWebhooks',
    credential: 'secret',
    newSecret: svixSecret,
    newId: svixId,
    samples: {
      'invoice.paid': ({ iso, id }) => ({
        type: 'invoice.paid',
        timestamp: iso,
        data: { id: `inv_${id.slice(4, 16)}`, amount: 1999, currency: 'eur' },
      }),
    },
    sign: standardWebhooks('webhook'),
  },
  {
    name: 'resend',
    credential: 'secret',
    newSecret: svixSecret,
    newId: svixId,
    samples: {
      'email.sent': resendEmail('delivered@resend.dev'),
      'email.delivered': resendEmail('delivered@resend.dev'),
      'email.bounced': resendEmail('bounced@resend.dev', {
        bounce: {
          message: 'The recipient mailbox does not exist.',
          subType: 'Suppressed',
          type: 'Permanent',
        },
      }),
    },
    sign: standardWebhooks('svix'),
  },
  {
    // Clerk delivers through Svix: the svix-* headers, a `whsec_` secret.
    name: 'clerk',
    credential: 'secret',
    newSecret: svixSecret,
    newId: svixId,
    samples: {
      'user.created': ({ at }) => clerkEvent('user.created', at.getTime(), clerkUser(at.getTime())),
      'user.updated': ({ at }) => {
        const user = clerkUser(at.getTime() - 86_400_000);
        return clerkEvent('user.updated', at.getTime(), {
          ...user,
          first_name: 'Updated',
          updated_at: at.getTime(),
        });
      },
      'user.deleted': ({ at }) =>
        clerkEvent('user.deleted', at.getTime(), { deleted: true, id: `user_${base62(27)}`, object: 'user' }),
      'session.created': ({ at }) => {
        const ms = at.getTime();
        return clerkEvent('session.created', ms, {
          id: `sess_${base62(27)}`,
          object: 'session',
          client_id: `client_${base62(27)}`,
          user_id: `user_${base62(27)}`,
          status: 'active',
          last_active_at: ms,
          expire_at: ms + 7 * 86_400_000,
          abandon_at: ms + 30 * 86_400_000,
          created_at: ms,
          updated_at: ms,
        });
      },
    },
    sign: standardWebhooks('svix'),
  },
  {
    // Liveblocks delivers through Svix with the Standard Webhooks names (webhook-*), as its
    // WebhookHandler (@liveblocks/node) reads them.
    name: 'liveblocks',
    credential: 'secret',
    newSecret: svixSecret,
    newId: svixId,
    samples: {
      storageUpdated: liveblocksEvent((iso) => ({ updatedAt: iso })),
      userEntered: liveblocksEvent((iso) => ({ ...liveblocksVisitor, enteredAt: iso, numActiveUsers: 2 })),
      userLeft: liveblocksEvent((iso) => ({ ...liveblocksVisitor, leftAt: iso, numActiveUsers: 1 })),
      commentCreated: liveblocksEvent((iso) => ({
        threadId: `th_${base62(21)}`,
        commentId: `cm_${base62(21)}`,
        createdAt: iso,
        createdBy: 'user-42',
      })),
    },
    sign: standardWebhooks('webhook'),
  },
  {
    // Polar: webhook-* headers, the message id the event's UUID. Its secrets since 2026-09-08 are
    // `whsec_` + the base64 of 32 bytes, signed per the spec (see polarKey for the older ones).
    name: 'polar',
    credential: 'secret',
    newSecret: () => `whsec_${randomBytes(32).toString('base64')}`,
    newId: uuid,
    samples: {
      'order.paid': ({ iso }) => {
        const product = uuid();
        return {
          type: 'order.paid',
          timestamp: iso,
          data: {
            id: uuid(),
            created_at: iso,
            modified_at: iso,
            status: 'paid',
            paid: true,
            subtotal_amount: 9000,
            discount_amount: 0,
            net_amount: 9000,
            tax_amount: 1800,
            total_amount: 10800,
            refunded_amount: 0,
            refunded_tax_amount: 0,
            currency: 'usd',
            billing_reason: 'purchase',
            billing_name: 'Jane Doe',
            invoice_number: `POLAR-${randomHex(8).toUpperCase()}-0001`,
            is_invoice_generated: false,
            customer_id: uuid(),
            product_id: product,
            discount_id: null,
            subscription_id: null,
            checkout_id: uuid(),
            metadata: {},
            custom_field_data: {},
            customer: polarCustomer(iso),
            product: polarProduct(iso, product, false),
            discount: null,
            subscription: null,
            items: [
              {
                id: uuid(),
                created_at: iso,
                modified_at: null,
                label: 'Lifetime licence',
                amount: 9000,
                tax_amount: 1800,
                proration: false,
                product_price_id: uuid(),
              },
            ],
          },
        };
      },
      'subscription.active': ({ iso }) => {
        const product = uuid();
        return {
          type: 'subscription.active',
          timestamp: iso,
          data: {
            id: uuid(),
            created_at: iso,
            modified_at: iso,
            amount: 2000,
            currency: 'usd',
            recurring_interval: 'month',
            status: 'active',
            current_period_start: iso,
            current_period_end: new Date(Date.parse(iso) + 30 * 86_400_000).toISOString(),
            cancel_at_period_end: false,
            canceled_at: null,
            started_at: iso,
            ends_at: null,
            ended_at: null,
            customer_id: uuid(),
            product_id: product,
            discount_id: null,
            checkout_id: uuid(),
            metadata: {},
            customer: polarCustomer(iso),
            product: polarProduct(iso, product, true),
            discount: null,
          },
        };
      },
      'customer.created': ({ iso }) => ({
        type: 'customer.created',
        timestamp: iso,
        data: polarCustomer(iso),
      }),
    },
    sign: polarSign,
  },
  ...more,
];
