/**
 * Body-HMAC senders (first half, continued): Bitbucket, Cal.com, Checkout.com, Coinbase Commerce.
 * Each signs the raw body with HMAC-SHA256 and sends it hex in one header.
 */
import { randomInt } from 'node:crypto';
import type { SenderName } from '../names.js';
import { bodyHmac, randomHex, uuid } from '../sign.js';
import type { SampleContext, SenderRow } from '../types.js';

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `length` random characters of `alphabet`. */
export const randomOf = (alphabet: string, length: number): string =>
  Array.from({ length }, () => alphabet[randomInt(alphabet.length)]).join('');

/** `length` random letters and digits. */
export const randomAlnum = (length: number): string => randomOf(ALNUM, length);

/**
 * A typed-in or generated secret: `length` lower-case letters and digits, so that it never starts
 * like the API keys and tokens the providers refuse as lookalikes (`ATBB`, `ATATT`, `eyJ`...).
 */
export const randomSecret = (length: number): string =>
  randomOf('abcdefghijklmnopqrstuvwxyz0123456789', length);

/** `length` random decimal digits, never starting with 0. */
export const randomDigits = (length: number): string =>
  `${randomInt(1, 10)}${randomOf('0123456789', length - 1)}`;

// --- Bitbucket Cloud -------------------------------------------------------------------------

const bitbucketUser = {
  display_name: 'Ada Lovelace',
  uuid: '{4f2c9a1e-7d3b-4e5f-9a8b-1c2d3e4f5a6b}',
  account_id: '557058:0f1a2b3c-4d5e-6f70-8192-a3b4c5d6e7f8',
  nickname: 'ada',
  type: 'user',
};
const bitbucketRepository = {
  type: 'repository',
  full_name: 'analytical/engine',
  name: 'engine',
  uuid: '{8e1d2c3b-4a59-4687-b7c6-d5e4f3a2b1c0}',
  is_private: true,
  scm: 'git',
  links: { html: { href: 'https://bitbucket.org/analytical/engine' } },
  workspace: { type: 'workspace', slug: 'analytical', name: 'Analytical' },
};

const bitbucketPullRequest = (ctx: SampleContext, state: 'OPEN' | 'MERGED') => ({
  type: 'pullrequest',
  id: 42,
  title: 'Add the difference engine',
  description: 'Implements the method of finite differences.',
  state,
  author: bitbucketUser,
  source: {
    branch: { name: 'feature/difference' },
    commit: { hash: randomHex(12) },
    repository: bitbucketRepository,
  },
  destination: { branch: { name: 'main' }, commit: { hash: randomHex(12) }, repository: bitbucketRepository },
  merge_commit: state === 'MERGED' ? { hash: randomHex(12) } : null,
  comment_count: 0,
  task_count: 0,
  close_source_branch: true,
  created_on: ctx.iso,
  updated_on: ctx.iso,
  links: { html: { href: 'https://bitbucket.org/analytical/engine/pull-requests/42' } },
});

const bitbucket: SenderRow & { readonly name: SenderName } = {
  name: 'bitbucket',
  credential: 'secret',
  // The webhook form's "Generate secret" (or any text typed there).
  newSecret: () => randomSecret(32),
  // X-Request-UUID, unsigned; the body carries no event id.
  newId: uuid,
  samples: {
    'repo:push': ({ iso }) => {
      const hash = randomHex(40);
      return {
        push: {
          changes: [
            {
              old: { type: 'branch', name: 'main', target: { type: 'commit', hash: randomHex(40) } },
              new: {
                type: 'branch',
                name: 'main',
                target: {
                  type: 'commit',
                  hash,
                  date: iso,
                  message: 'Fix the carry\n',
                  author: { raw: 'Ada Lovelace <ada@example.com>', user: bitbucketUser },
                },
              },
              created: false,
              forced: false,
              closed: false,
              truncated: false,
              commits: [{ type: 'commit', hash, message: 'Fix the carry\n', date: iso }],
            },
          ],
        },
        actor: bitbucketUser,
        repository: bitbucketRepository,
      };
    },
    'pullrequest:created': (ctx) => ({
      actor: bitbucketUser,
      pullrequest: bitbucketPullRequest(ctx, 'OPEN'),
      repository: bitbucketRepository,
    }),
    'pullrequest:fulfilled': (ctx) => ({
      actor: bitbucketUser,
      pullrequest: bitbucketPullRequest(ctx, 'MERGED'),
      repository: bitbucketRepository,
    }),
  },
  // X-Hub-Signature: sha256=<hex HMAC-SHA256 of the body> (Cloud and Data Center alike).
  sign: bodyHmac({
    header: 'x-hub-signature',
    encoding: 'hex',
    prefix: 'sha256=',
    headers: ({ id, type }) => ({
      'x-event-key': type,
      'x-request-uuid': id,
      'x-hook-uuid': '{5d3c9b2a-1f0e-4d8c-b7a6-958473625140}',
      'x-attempt-number': '1',
      'user-agent': 'Bitbucket-Webhooks/2.0',
    }),
  }),
};

// --- Cal.com ---------------------------------------------------------------------------------

const calComBooking = (ctx: SampleContext, status: 'ACCEPTED' | 'CANCELLED') => {
  const start = new Date(ctx.at.getTime() + 86_400_000);
  start.setUTCMinutes(0, 0, 0);
  return {
    type: '30min',
    title: '30 Min Meeting between Ada Lovelace and Charles Babbage',
    description: '',
    additionalNotes: '',
    customInputs: {},
    startTime: start.toISOString().replace('.000Z', 'Z'),
    endTime: new Date(start.getTime() + 30 * 60_000).toISOString().replace('.000Z', 'Z'),
    organizer: {
      id: 5,
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      username: 'ada',
      timeZone: 'Europe/London',
      language: { locale: 'en' },
    },
    attendees: [
      {
        email: 'charles@example.com',
        name: 'Charles Babbage',
        timeZone: 'Europe/London',
        language: { locale: 'en' },
      },
    ],
    location: 'integrations:daily',
    uid: ctx.id,
    bookingId: Number(randomDigits(6)),
    eventTypeId: 12,
    status,
  };
};

const calCom: SenderRow & { readonly name: SenderName } = {
  name: 'calCom',
  credential: 'secret',
  newSecret: () => randomSecret(32),
  // No event id: the booking's uid is what the delivery names.
  newId: () => randomAlnum(22),
  samples: {
    BOOKING_CREATED: (ctx) => ({
      triggerEvent: 'BOOKING_CREATED',
      createdAt: ctx.iso,
      payload: calComBooking(ctx, 'ACCEPTED'),
    }),
    BOOKING_CANCELLED: (ctx) => ({
      triggerEvent: 'BOOKING_CANCELLED',
      createdAt: ctx.iso,
      payload: { ...calComBooking(ctx, 'CANCELLED'), cancellationReason: 'Something came up' },
    }),
    BOOKING_RESCHEDULED: (ctx) => ({
      triggerEvent: 'BOOKING_RESCHEDULED',
      createdAt: ctx.iso,
      payload: { ...calComBooking(ctx, 'ACCEPTED'), rescheduleUid: randomAlnum(22) },
    }),
  },
  // X-Cal-Signature-256: <hex HMAC-SHA256 of the body>.
  sign: bodyHmac({ header: 'x-cal-signature-256', encoding: 'hex' }),
};

// --- Checkout.com ----------------------------------------------------------------------------

/** Checkout.com's ids: a prefix and 26 base32 characters (`evt_az5sblvku4ge3dwpztvyizgcau`). */
const ckoId = (prefix: string) => `${prefix}_${randomOf('abcdefghijklmnopqrstuvwxyz234567', 26)}`;

const ckoPayment = (ctx: SampleContext, fields: Record<string, unknown>) => {
  const payment = ckoId('pay');
  return {
    id: ctx.id,
    type: ctx.type,
    version: '1.0.33',
    created_on: ctx.iso,
    data: {
      id: payment,
      action_id: ckoId('act'),
      amount: 6540,
      currency: 'GBP',
      processed_on: ctx.iso,
      reference: 'ORD-5023-4E89',
      metadata: {},
      ...fields,
    },
    _links: {
      self: { href: `https://api.sandbox.checkout.com/workflows/events/${ctx.id}` },
      payment: { href: `https://api.sandbox.checkout.com/payments/${payment}` },
    },
  };
};

const checkoutCom: SenderRow & { readonly name: SenderName } = {
  name: 'checkoutCom',
  credential: 'secret',
  // The signature key the Dashboard generates for a webhook (a UUID).
  newSecret: uuid,
  newId: () => ckoId('evt'),
  samples: {
    payment_approved: (ctx) =>
      ckoPayment(ctx, {
        payment_type: 'Regular',
        auth_code: '770687',
        response_code: '10000',
        response_summary: 'Approved',
        scheme_id: randomDigits(15),
        source: { id: ckoId('src'), type: 'card', scheme: 'Visa', last_4: '4242', bin: '424242' },
        customer: { id: ckoId('cus'), email: 'ada@example.com' },
      }),
    payment_captured: (ctx) =>
      ckoPayment(ctx, {
        response_code: '10000',
        response_summary: 'Approved',
        balances: { total_captured: 6540 },
      }),
    payment_declined: (ctx) =>
      ckoPayment(ctx, {
        payment_type: 'Regular',
        response_code: '20005',
        response_summary: 'Decline - Do not honour',
        source: { id: ckoId('src'), type: 'card', scheme: 'Visa', last_4: '0002', bin: '400000' },
      }),
    payment_refunded: (ctx) =>
      ckoPayment(ctx, {
        response_code: '10000',
        response_summary: 'Approved',
        balances: { total_refunded: 6540 },
      }),
  },
  // Cko-Signature: <hex HMAC-SHA256 of the body, keyed with the webhook's signature key>.
  sign: bodyHmac({ header: 'cko-signature', encoding: 'hex' }),
};

// --- Coinbase Commerce -----------------------------------------------------------------------

const charge = (ctx: SampleContext, timeline: readonly string[]) => {
  const code = randomOf('ABCDEFGHJKLMNPQRSTUVWXYZ23456789', 8);
  return {
    id: uuid(),
    code,
    resource: 'charge',
    name: 'The Difference Engine',
    description: 'Plans, volume I',
    hosted_url: `https://commerce.coinbase.com/pay/${uuid()}`,
    created_at: ctx.iso,
    expires_at: new Date(ctx.at.getTime() + 3_600_000).toISOString().replace('.000Z', 'Z'),
    pricing_type: 'fixed_price',
    pricing: {
      local: { amount: '100.00', currency: 'USD' },
      settlement: { amount: '100.00', currency: 'USDC' },
    },
    timeline: timeline.map((status) => ({ status, time: ctx.iso })),
    metadata: { customer_id: 'cus_1843', customer_name: 'Ada Lovelace' },
  };
};

const coinbaseEvent =
  (timeline: readonly string[]) =>
  (ctx: SampleContext): Record<string, unknown> => ({
    id: Number(randomDigits(7)),
    scheduled_for: ctx.iso,
    attempt_number: 1,
    event: {
      id: ctx.id,
      resource: 'event',
      type: ctx.type,
      api_version: '2018-03-22',
      created_at: ctx.iso,
      data: charge(ctx, timeline),
    },
  });

const coinbaseCommerce: SenderRow & { readonly name: SenderName } = {
  name: 'coinbaseCommerce',
  credential: 'secret',
  // The subscription's shared secret, as Settings → Webhook subscriptions shows it (a UUID).
  newSecret: uuid,
  newId: uuid,
  samples: {
    'charge:created': coinbaseEvent(['NEW']),
    'charge:pending': coinbaseEvent(['NEW', 'PENDING']),
    'charge:confirmed': coinbaseEvent(['NEW', 'PENDING', 'COMPLETED']),
    'charge:failed': coinbaseEvent(['NEW', 'EXPIRED']),
  },
  // X-CC-Webhook-Signature: <hex HMAC-SHA256 of the body, keyed with the shared secret>.
  sign: bodyHmac({ header: 'x-cc-webhook-signature', encoding: 'hex' }),
};

export const rows: readonly (SenderRow & { readonly name: SenderName })[] = [
  bitbucket,
  calCom,
  checkoutCom,
  coinbaseCommerce,
];
