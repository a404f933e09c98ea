/** Timestamped-HMAC senders: the time is signed with the body. */
import type { SenderName } from '../names.js';
import { hmac, randomHex } from '../sign.js';
import type { SampleContext, SenderRow } from '../types.js';

const stripeEvent =
  (type: string, object: (ctx: SampleContext) => Record<string, unknown>) => (ctx: SampleContext) => ({
    id: ctx.id,
    object: 'event',
    api_version: '2025-01-27.acacia',
    created: ctx.seconds,
    data: { object: object(ctx) },
    livemode: false,
    pending_webhooks: 1,
    request: { id: `req_${randomHex(14)}`, idempotency_key: crypto.randomUUID() },
    type,
  });

export const rows: readonly (SenderRow & { readonly name: SenderName })[] = [
  {
    name: 'stripe',
    credential: 'secret',
    newSecret: () => `whsec_${randomHex(32)}`,
    newId: () => `evt_${randomHex(24)}`,
    samples: {
      'invoice.paid': stripeEvent('invoice.paid', ({ seconds }) => ({
        id: `in_${randomHex(24)}`,
        object: 'invoice',
        amount_due: 2000,
        amount_paid: 2000,
        currency: 'eur',
        customer: `cus_${randomHex(14)}`,
        status: 'paid',
        created: seconds,
      })),
      'checkout.session.completed': stripeEvent('checkout.session.completed', ({ seconds }) => ({
        id: `cs_test_${randomHex(24)}`,
        object: 'checkout.session',
        amount_total: 2000,
        currency: 'eur',
        customer: `cus_${randomHex(14)}`,
        mode: 'payment',
        payment_status: 'paid',
        status: 'complete',
        created: seconds,
      })),
      'payment_intent.succeeded': stripeEvent('payment_intent.succeeded', ({ seconds }) => ({
        id: `pi_${randomHex(24)}`,
        object: 'payment_intent',
        amount: 2000,
        amount_received: 2000,
        currency: 'eur',
        status: 'succeeded',
        created: seconds,
      })),
      'customer.subscription.updated': stripeEvent('customer.subscription.updated', ({ seconds }) => ({
        id: `sub_${randomHex(24)}`,
        object: 'subscription',
        customer: `cus_${randomHex(14)}`,
        status: 'active',
        current_period_start: seconds,
        current_period_end: seconds + 30 * 86_400,
      })),
    },
    // Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body"> (the secret's text is the key).
    sign: ({ secret, seconds, body }) => ({
      headers: {
        'stripe-signature': `t=${seconds},v1=${hmac('sha256', secret, [`${seconds}.`, body], 'hex')}`,
        'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
      },
    }),
  },
];
