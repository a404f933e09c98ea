/**
 * Timestamped-HMAC senders: the time is signed with the body. Stripe, Calendly, Lob, Paddle,
 * Persona here; Box, HubSpot, Linear, Mailgun and Mux in timestamped-2.ts; the senders with a URL
 * handshake (Slack, Twitch, Zoom) and Zendesk in timestamped-3.ts.
 */
import type { SenderName } from '../names.js';
import { hmac, randomHex, uuid } from '../sign.js';
import type { SampleContext, SenderRow } from '../types.js';
import { rows as timestamped2 } from './timestamped-2.js';
import { rows as timestamped3 } from './timestamped-3.js';
import { randomAlnum, randomDigits, tV1, ulid } from './timestamped-common.js';

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

const stripeRows: readonly (SenderRow & { readonly name: SenderName })[] = [
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

/** Calendly writes its times with microseconds. */
const micro = (iso: string): string => iso.replace(/Z$/, '000Z');
const calendlyUser = 'https://api.calendly.com/users/AAAAAAAAAAAAAAAA';
const calendlyId = (): string => randomAlnum(16).toUpperCase();

const calendlyInvitee =
  (status: 'active' | 'canceled') =>
  ({ id, iso, at }: SampleContext) => {
    const event = `https://api.calendly.com/scheduled_events/${calendlyId()}`;
    const start = new Date(at.getTime() + 2 * 86_400_000);
    return {
      created_at: micro(iso),
      created_by: calendlyUser,
      event: status === 'active' ? 'invitee.created' : 'invitee.canceled',
      payload: {
        uri: `${event}/invitees/${id}`,
        email: 'test@example.com',
        name: 'John Doe',
        first_name: 'John',
        last_name: 'Doe',
        status,
        timezone: 'America/New_York',
        event,
        created_at: micro(iso),
        updated_at: micro(iso),
        questions_and_answers: [],
        tracking: { utm_campaign: null, utm_source: null, utm_medium: null, utm_content: null },
        cancel_url: `https://calendly.com/cancellations/${id}`,
        reschedule_url: `https://calendly.com/reschedulings/${id}`,
        rescheduled: false,
        old_invitee: null,
        new_invitee: null,
        no_show: null,
        ...(status === 'canceled'
          ? {
              cancellation: {
                canceled_by: 'John Doe',
                reason: 'Something came up',
                canceler_type: 'invitee',
                created_at: micro(iso),
              },
            }
          : {}),
        scheduled_event: {
          uri: event,
          name: '15 Minute Meeting',
          status,
          start_time: micro(start.toISOString()),
          end_time: micro(new Date(start.getTime() + 15 * 60_000).toISOString()),
          event_type: `https://api.calendly.com/event_types/${calendlyId()}`,
          location: { type: 'zoom', join_url: 'https://calendly.zoom.us/j/5553338765' },
          invitees_counter: { total: 1, active: status === 'active' ? 1 : 0, limit: 1 },
          created_at: micro(iso),
          updated_at: micro(iso),
          event_memberships: [{ user: calendlyUser }],
          event_guests: [],
        },
      },
    };
  };

const lobAddress = (name: string, line1: string, zip: string) => ({
  id: `adr_${randomHex(16)}`,
  name,
  address_line1: line1,
  address_city: 'SAN FRANCISCO',
  address_state: 'CA',
  address_zip: zip,
  address_country: 'UNITED STATES',
  object: 'address',
});

const lobEvent =
  (type: string, resource: string, piece: (ctx: SampleContext) => Record<string, unknown>) =>
  (ctx: SampleContext) => {
    const body = piece(ctx);
    return {
      id: ctx.id,
      body,
      reference_id: body.id,
      event_type: { id: type, enabled_for_test: true, resource, object: 'event_type' },
      date_created: ctx.iso,
      object: 'event',
    };
  };

const lobLetter =
  (delivered: boolean) =>
  ({ iso }: SampleContext): Record<string, unknown> => {
    const id = `ltr_${randomHex(16)}`;
    return {
      id,
      description: 'Demo Letter',
      metadata: {},
      to: lobAddress('HARRY ZHANG', '210 KING ST', '94107-1741'),
      from: lobAddress('LEORE AVIDAR', '185 BERRY ST STE 6100', '94107-1741'),
      color: false,
      double_sided: true,
      address_placement: 'top_first_page',
      mail_type: 'usps_first_class',
      url: `https://lob-assets.com/letters/${id}.pdf`,
      carrier: 'USPS',
      tracking_events: delivered
        ? [{ id: `evnt_${randomHex(15)}`, type: 'normal', name: 'Delivered', location: '94107', time: iso }]
        : [],
      send_date: iso,
      expected_delivery_date: iso.slice(0, 10),
      date_created: iso,
      date_modified: iso,
      object: 'letter',
    };
  };

const paddleEvent =
  (type: string, data: (ctx: SampleContext) => Record<string, unknown>) => (ctx: SampleContext) => ({
    event_id: ctx.id,
    event_type: type,
    occurred_at: micro(ctx.iso),
    notification_id: `ntf_${ulid()}`,
    data: data(ctx),
  });

const paddleItems = () => [
  {
    price: {
      id: `pri_${ulid()}`,
      product_id: `pro_${ulid()}`,
      description: 'Monthly (per seat)',
      billing_cycle: { interval: 'month', frequency: 1 },
      unit_price: { amount: '3000', currency_code: 'USD' },
      status: 'active',
    },
    quantity: 1,
  },
];

const personaEvent =
  (name: string, status: string) =>
  ({ id, iso }: SampleContext) => ({
    data: {
      type: 'event',
      id,
      attributes: {
        name,
        payload: {
          data: {
            type: 'inquiry',
            id: `inq_${randomAlnum(24)}`,
            attributes: {
              status,
              'reference-id': `user_${randomDigits(6)}`,
              note: null,
              tags: [],
              'created-at': iso,
              'started-at': status === 'created' ? null : iso,
              'completed-at': status === 'created' ? null : iso,
              'decisioned-at': status === 'approved' ? iso : null,
            },
            relationships: {
              account: { data: { type: 'account', id: `act_${randomAlnum(24)}` } },
              template: { data: { type: 'inquiry-template', id: `itmpl_${randomAlnum(24)}` } },
            },
          },
          included: [],
        },
        'created-at': iso,
        'redacted-at': null,
      },
    },
  });

const ownRows: readonly (SenderRow & { readonly name: SenderName })[] = [
  {
    name: 'calendly',
    credential: 'secret',
    newSecret: () => Buffer.from(randomHex(64), 'hex').toString('base64url'),
    // Calendly's deliveries carry no event id: the kit's id is the invitee's, in its URI.
    newId: calendlyId,
    samples: {
      'invitee.created': calendlyInvitee('active'),
      'invitee.canceled': calendlyInvitee('canceled'),
      'routing_form_submission.created': ({ id, iso }) => ({
        created_at: micro(iso),
        created_by: calendlyUser,
        event: 'routing_form_submission.created',
        payload: {
          uri: `https://api.calendly.com/routing_form_submissions/${id}`,
          routing_form: `https://api.calendly.com/routing_forms/${calendlyId()}`,
          questions_and_answers: [
            { question_uuid: uuid(), question: 'Email', answer: 'test@example.com' },
            { question_uuid: uuid(), question: 'Team size', answer: '11-50' },
          ],
          tracking: { utm_campaign: null, utm_source: null, utm_medium: null, utm_content: null },
          result: { type: 'event_type', value: `https://api.calendly.com/event_types/${calendlyId()}` },
          submitter: null,
          submitter_type: null,
          created_at: micro(iso),
          updated_at: micro(iso),
        },
      }),
    },
    sign: tV1('calendly-webhook-signature'),
  },
  {
    name: 'lob',
    credential: 'secret',
    newSecret: () => randomHex(32),
    newId: () => `evt_${randomHex(16)}`,
    samples: {
      'letter.created': lobEvent('letter.created', 'letters', lobLetter(false)),
      'letter.delivered': lobEvent('letter.delivered', 'letters', lobLetter(true)),
      'postcard.created': lobEvent('postcard.created', 'postcards', ({ iso }) => ({
        id: `psc_${randomHex(16)}`,
        description: 'Demo Postcard',
        metadata: {},
        to: lobAddress('HARRY ZHANG', '210 KING ST', '94107-1741'),
        size: '4x6',
        mail_type: 'usps_first_class',
        carrier: 'USPS',
        tracking_events: [],
        send_date: iso,
        date_created: iso,
        date_modified: iso,
        object: 'postcard',
      })),
    },
    // Lob-Signature: hex HMAC-SHA256 of "<Lob-Signature-Timestamp>.body", the timestamp in ms.
    sign: ({ secret, at, body }) => {
      const t = String(at.getTime());
      return {
        headers: {
          'lob-signature-timestamp': t,
          'lob-signature': hmac('sha256', secret, [`${t}.`, body], 'hex'),
        },
      };
    },
  },
  {
    name: 'paddle',
    credential: 'secret',
    newSecret: () => `pdl_ntfset_${ulid()}_${randomAlnum(32)}`,
    newId: () => `evt_${ulid()}`,
    samples: {
      'transaction.completed': paddleEvent('transaction.completed', ({ iso }) => ({
        id: `txn_${ulid()}`,
        status: 'completed',
        origin: 'web',
        customer_id: `ctm_${ulid()}`,
        address_id: `add_${ulid()}`,
        subscription_id: `sub_${ulid()}`,
        currency_code: 'USD',
        collection_mode: 'automatic',
        items: paddleItems(),
        details: {
          totals: { subtotal: '3000', tax: '0', total: '3000', grand_total: '3000', currency_code: 'USD' },
        },
        custom_data: null,
        created_at: micro(iso),
        updated_at: micro(iso),
        billed_at: micro(iso),
      })),
      'subscription.created': paddleEvent('subscription.created', ({ iso }) => ({
        id: `sub_${ulid()}`,
        status: 'active',
        customer_id: `ctm_${ulid()}`,
        address_id: `add_${ulid()}`,
        currency_code: 'USD',
        collection_mode: 'automatic',
        billing_cycle: { interval: 'month', frequency: 1 },
        items: paddleItems(),
        started_at: micro(iso),
        first_billed_at: micro(iso),
        next_billed_at: micro(new Date(Date.parse(iso) + 30 * 86_400_000).toISOString()),
        created_at: micro(iso),
        updated_at: micro(iso),
      })),
      'customer.created': paddleEvent('customer.created', ({ iso }) => ({
        id: `ctm_${ulid()}`,
        name: 'Sam Miller',
        email: 'sam@example.com',
        status: 'active',
        locale: 'en',
        marketing_consent: false,
        custom_data: null,
        created_at: micro(iso),
        updated_at: micro(iso),
      })),
    },
    // Paddle-Signature: ts=<unix seconds>;h1=<hex HMAC-SHA256 of "ts:body">.
    sign: ({ secret, seconds, body }) => ({
      headers: {
        'paddle-signature': `ts=${seconds};h1=${hmac('sha256', secret, [`${seconds}:`, body], 'hex')}`,
      },
    }),
  },
  {
    name: 'persona',
    credential: 'secret',
    newSecret: () => `wbhsec_${uuid()}`,
    newId: () => `evt_${randomAlnum(24)}`,
    samples: {
      'inquiry.created': personaEvent('inquiry.created', 'created'),
      'inquiry.completed': personaEvent('inquiry.completed', 'completed'),
      'inquiry.approved': personaEvent('inquiry.approved', 'approved'),
    },
    sign: tV1('persona-signature'),
  },
];

export const rows: readonly (SenderRow & { readonly name: SenderName })[] = [
  ...stripeRows,
  ...ownRows,
  ...timestamped2,
  ...timestamped3,
];
