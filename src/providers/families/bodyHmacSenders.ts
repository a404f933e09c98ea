/**
 * The body-HMAC senders whose declaration is data alone and whose options are
 * `{ secret, retention }`: one row each, keyed by the provider's export name. Each provider's own
 * file keeps its event type and its documentation and hands its options to its row here, so the
 * mechanism (`bodyHmac`) and the options type are written once.
 */
import type { Duration } from '../../core/duration.js';
import type { SecretInput } from '../shared.js';
import type { AuthenticatingProvider } from '../types.js';
import { type BodyHmacDeclaration, bodyHmac } from './bodyHmac.js';

/** What each sender of the table takes (its own file says which secret and which default). */
export interface BodyHmacSenderOptions {
  /**
   * The webhook's signing secret from the sender's dashboard; an array while rotating.
   * @example process.env.WEBHOOK_SECRET!
   */
  secret: SecretInput;
  /**
   * How long a completed key is remembered.
   * @default the sender's retry window plus a margin (see its row)
   * @example '7d'
   */
  retention?: Duration;
}

type Factory = (options: BodyHmacSenderOptions) => AuthenticatingProvider<Record<string, unknown>>;

function table<K extends string>(
  rows: Record<K, BodyHmacDeclaration<Record<string, unknown>>>,
): Record<K, Factory> {
  const factories = {} as Record<K, Factory>;
  for (const key of Object.keys(rows) as K[]) factories[key] = bodyHmac(rows[key]);
  return factories;
}

export const bodyHmacSenders = table({
  bitbucket: {
    name: 'bitbucket',
    retention: '1d',
    secret: {
      lookalikes: [
        ['ATBB', 'an app password'],
        ['ATATT', 'an Atlassian API token'],
        ['ATCTT', 'an access token'],
      ],
      expected: "the webhook's secret (Repository settings → Webhooks)",
    },
    signature: { header: 'x-hub-signature', encoding: 'hex', prefix: 'sha256=' },
    requireHeaders: ['x-event-key'],
    event: {
      // Cloud sends X-Request-UUID, Data Center X-Request-Id: unsigned, so the body digest is the key.
      id: { header: ['x-request-uuid', 'x-request-id'], signed: false },
      type: { header: 'x-event-key' },
      typeSigned: false,
    },
  },
  calCom: {
    name: 'calcom',
    label: 'calCom',
    retention: '1d',
    secret: {
      lookalikes: [
        ['cal_live_', 'a Cal.com API key'],
        ['cal_test_', 'a Cal.com API key'],
      ],
      expected: "the webhook's secret (Settings → Developer → Webhooks)",
    },
    signature: { header: 'x-cal-signature-256', encoding: 'hex' },
    // No event id: dedup keys on a digest of the signed body.
    event: { type: 'triggerEvent', typeSigned: true },
  },
  checkoutCom: {
    name: 'checkout-com',
    label: 'checkoutCom',
    retention: '2d',
    secret: {
      lookalikes: [
        ['sk_', 'a secret API key'],
        ['pk_', 'a public API key'],
      ],
      expected: "the signature key of the workflow's webhook action",
    },
    signature: { header: 'cko-signature', encoding: 'hex' },
    event: { id: 'id', type: 'type', typeSigned: true },
  },
  jira: {
    name: 'jira',
    retention: '2d',
    secret: {
      lookalikes: [
        ['ATATT', 'an Atlassian API token'],
        ['ATCTT', 'an access token'],
      ],
      expected: 'the secret entered for the webhook (System → WebHooks)',
    },
    signature: { header: 'x-hub-signature', encoding: 'hex', prefix: 'sha256=' },
    event: {
      // X-Atlassian-Webhook-Identifier is the same on every retry but unsigned: reported, not keyed on.
      id: { header: 'x-atlassian-webhook-identifier', signed: false },
      type: 'webhookEvent',
      typeSigned: true,
    },
  },
  razorpay: {
    name: 'razorpay',
    retention: '2d',
    secret: {
      lookalikes: [
        ['rzp_live_', 'an API key id'],
        ['rzp_test_', 'an API key id'],
      ],
      expected: 'the secret you entered for the webhook (Dashboard → Accounts & Settings → Webhooks)',
    },
    signature: { header: 'x-razorpay-signature', encoding: 'hex' },
    event: {
      // X-Razorpay-Event-Id is the same on every retry but unsigned: reported, not keyed on.
      id: { header: 'x-razorpay-event-id', signed: false },
      type: 'event',
      typeSigned: true,
    },
  },
  segment: {
    name: 'segment',
    retention: '1d',
    secret: { expected: "the shared secret of the Webhooks destination's settings" },
    algorithm: 'sha1',
    signature: { header: 'x-signature', encoding: 'hex' },
    event: { id: 'messageId', type: 'type', typeSigned: true },
  },
  sentry: {
    name: 'sentry',
    retention: '1d',
    secret: {
      lookalikes: [
        ['sntrys_', 'an organization auth token'],
        ['sntryu_', 'a user auth token'],
      ],
      expected: "the integration's client secret (Developer Settings → your integration)",
    },
    signature: { header: 'sentry-hook-signature', encoding: 'hex' },
    requireHeaders: ['sentry-hook-resource'],
    event: {
      id: { header: 'request-id', signed: false },
      // Sentry-Hook-Resource (`issue`, `event_alert`, `installation`...) is not signed.
      type: { header: 'sentry-hook-resource' },
      typeSigned: false,
    },
  },
  typeform: {
    name: 'typeform',
    retention: '2d',
    secret: {
      lookalikes: [['tfp_', 'a personal access token']],
      expected: "the webhook's secret (Connect → Webhooks)",
    },
    signature: { header: 'typeform-signature', encoding: 'base64', prefix: 'sha256=' },
    event: { id: 'event_id', type: 'event_type', typeSigned: true },
  },
  vercel: {
    name: 'vercel',
    retention: '3d',
    secret: { expected: "the webhook's secret (Team settings → Webhooks), shown when it was created" },
    algorithm: 'sha1',
    signature: { header: 'x-vercel-signature', encoding: 'hex' },
    event: { id: 'id', type: 'type', typeSigned: true },
  },
});
