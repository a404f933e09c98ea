/**
 * Body-HMAC senders (first half, continued): Airtable, Asana, Dropbox, Intercom, Jira, Lemon
 * Squeezy. Each signs the raw body with an HMAC sent hex in one header; Asana and Dropbox confirm
 * the endpoint with a handshake first.
 */
import { randomBytes } from 'node:crypto';
import type { SenderName } from '../names.js';
import { bodyHmac, randomHex, uuid } from '../sign.js';
import type { SampleContext, SenderRow } from '../types.js';
import { randomAlnum, randomDigits, randomOf, randomSecret } from './body-hmac-a-2.js';

type Row = SenderRow & { readonly name: SenderName };

/** `url` with `name=value` added to its query string. */
const withQuery = (url: string, name: string, value: string) =>
  `${url}${url.includes('?') ? '&' : '?'}${name}=${encodeURIComponent(value)}`;

// --- Airtable --------------------------------------------------------------------------------

/** Airtable's ids: a three-letter prefix and 14 letters and digits (`achXYZ...`). */
const airtableId = (prefix: string) => `${prefix}${randomAlnum(14)}`;

const airtable: Row = {
  name: 'airtable',
  credential: 'secret',
  // The create-webhook response's macSecretBase64.
  newSecret: () => randomBytes(64).toString('base64'),
  // A notification carries no event id; the id is the webhook's (`webhook.id`).
  newId: () => airtableId('ach'),
  samples: {
    // The only notification Airtable sends: "this webhook has new payloads to list".
    ping: ({ id, iso }) => ({ base: { id: airtableId('app') }, webhook: { id }, timestamp: iso }),
  },
  // X-Airtable-Content-MAC: hmac-sha256=<hex HMAC-SHA256 of the body, keyed with the decoded secret>.
  sign: bodyHmac({
    header: 'x-airtable-content-mac',
    encoding: 'hex',
    prefix: 'hmac-sha256=',
    key: (secret) => Buffer.from(secret, 'base64'),
  }),
};

// --- Asana -----------------------------------------------------------------------------------

const asanaUser = { gid: '1199', resource_type: 'user' };

const asanaEvent = (ctx: SampleContext, fields: Record<string, unknown>) => ({
  events: [{ user: asanaUser, created_at: ctx.iso, ...fields }],
});

const asana: Row = {
  name: 'asana',
  credential: 'secret',
  // The X-Hook-Secret of the handshake: 64 hex characters.
  newSecret: () => randomHex(64),
  // Events carry no id: the id is the gid of the resource the (first) event is about.
  newId: () => randomDigits(16),
  samples: {
    'task.changed': (ctx) =>
      asanaEvent(ctx, {
        action: 'changed',
        resource: { gid: ctx.id, resource_type: 'task', resource_subtype: 'default_task' },
        parent: null,
        change: {
          field: 'assignee',
          action: 'changed',
          new_value: { gid: '1199', resource_type: 'user' },
        },
      }),
    'task.added': (ctx) =>
      asanaEvent(ctx, {
        action: 'added',
        resource: { gid: ctx.id, resource_type: 'task', resource_subtype: 'default_task' },
        parent: { gid: '1200', resource_type: 'project' },
      }),
    'story.added': (ctx) =>
      asanaEvent(ctx, {
        action: 'added',
        resource: { gid: ctx.id, resource_type: 'story', resource_subtype: 'comment_added' },
        parent: { gid: randomDigits(16), resource_type: 'task', resource_subtype: 'default_task' },
      }),
  },
  // X-Hook-Signature: <hex HMAC-SHA256 of the body, keyed with the handshake's X-Hook-Secret>.
  sign: bodyHmac({ header: 'x-hook-signature', encoding: 'hex' }),
  // The handshake: a POST carrying X-Hook-Secret (the secret that signs what follows), to be echoed
  // back in the same header. Without a secret of the caller's, the challenge is the secret.
  handshake: ({ secret, challenge }) => {
    const hookSecret = secret || challenge;
    return { method: 'POST', headers: { 'x-hook-secret': hookSecret }, body: '', challenge: hookSecret };
  },
};

// --- Dropbox ---------------------------------------------------------------------------------

const dropbox: Row = {
  name: 'dropbox',
  credential: 'secret',
  // The App Console's app secret: 15 lower-case letters and digits.
  newSecret: () => randomSecret(15),
  // A notification carries no event id: the id is the account with changes (`dbid:...`).
  newId: () => `dbid:AA${randomOf('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_', 33)}`,
  samples: {
    // The only notification Dropbox sends: these accounts have changes to fetch.
    list_folder: ({ id }) => ({
      list_folder: { accounts: [id] },
      delta: { users: [Number(randomDigits(9))] },
    }),
  },
  // X-Dropbox-Signature: <hex HMAC-SHA256 of the body, keyed with the app secret>.
  sign: bodyHmac({ header: 'x-dropbox-signature', encoding: 'hex' }),
  // The endpoint check: GET <url>?challenge=<c>, to be answered with <c> as plain text.
  handshake: ({ url, challenge }) => ({
    method: 'GET',
    url: withQuery(url, 'challenge', challenge),
    headers: {},
    challenge,
  }),
};

// --- Intercom --------------------------------------------------------------------------------

const intercomAuthor = { type: 'user', id: randomHex(24), name: 'Ada Lovelace', email: 'ada@example.com' };

const conversation = (ctx: SampleContext, parts: readonly Record<string, unknown>[]) => {
  const id = randomDigits(12);
  return {
    type: 'conversation',
    id,
    created_at: ctx.seconds,
    updated_at: ctx.seconds,
    source: {
      type: 'conversation',
      id: randomDigits(10),
      delivered_as: 'customer_initiated',
      subject: '',
      body: '<p>Hello, the engine will not start.</p>',
      author: intercomAuthor,
      url: null,
    },
    contacts: { type: 'contact.list', contacts: [{ type: 'contact', id: intercomAuthor.id }] },
    state: 'open',
    open: true,
    read: false,
    conversation_parts: {
      type: 'conversation_part.list',
      conversation_parts: parts,
      total_count: parts.length,
    },
  };
};

const intercomNotification =
  (item: (ctx: SampleContext) => Record<string, unknown>) => (ctx: SampleContext) => ({
    type: 'notification_event',
    app_id: 'ecahpwf5',
    data: { type: 'notification_event_data', item: item(ctx) },
    links: {},
    id: ctx.id,
    topic: ctx.type,
    delivery_status: 'pending',
    delivery_attempts: 1,
    delivered_at: 0,
    first_sent_at: ctx.seconds,
    created_at: ctx.seconds,
    self: null,
  });

const intercom: Row = {
  name: 'intercom',
  credential: 'secret',
  // The app's client secret (Developer Hub → Basic information), a UUID.
  newSecret: uuid,
  newId: () => `notif_${uuid()}`,
  samples: {
    'conversation.user.created': intercomNotification((ctx) => conversation(ctx, [])),
    'conversation.admin.replied': intercomNotification((ctx) =>
      conversation(ctx, [
        {
          type: 'conversation_part',
          id: randomDigits(10),
          part_type: 'comment',
          body: '<p>Have you tried winding it?</p>',
          created_at: ctx.seconds,
          author: { type: 'admin', id: randomDigits(7), name: 'Charles Babbage' },
        },
      ]),
    ),
    'contact.user.created': intercomNotification((ctx) => ({
      type: 'contact',
      id: randomHex(24),
      workspace_id: 'ecahpwf5',
      external_id: randomDigits(6),
      role: 'user',
      email: 'ada@example.com',
      name: 'Ada Lovelace',
      created_at: ctx.seconds,
      updated_at: ctx.seconds,
    })),
  },
  // X-Hub-Signature: sha1=<hex HMAC-SHA1 of the body, keyed with the client secret>.
  sign: bodyHmac({
    header: 'x-hub-signature',
    encoding: 'hex',
    prefix: 'sha1=',
    algorithm: 'sha1',
    headers: () => ({ 'user-agent': 'intercom-parrot-service-rb' }),
  }),
};

// --- Jira ------------------------------------------------------------------------------------

const jiraUser = {
  self: 'https://analytical.atlassian.net/rest/api/2/user?accountId=5b10ac8d82e05b22cc7d4ef5',
  accountId: '5b10ac8d82e05b22cc7d4ef5',
  displayName: 'Ada Lovelace',
  active: true,
  timeZone: 'Europe/London',
  accountType: 'atlassian',
};

const jiraIssue = (ctx: SampleContext) => {
  const id = randomDigits(5);
  const at = ctx.iso.replace('Z', '+0000');
  return {
    id,
    self: `https://analytical.atlassian.net/rest/api/2/${id}`,
    key: `ENG-${randomDigits(3)}`,
    fields: {
      summary: 'The carry does not propagate',
      issuetype: { id: '10004', name: 'Bug', subtask: false },
      project: { id: '10000', key: 'ENG', name: 'Engine' },
      status: { id: '10000', name: 'To Do', statusCategory: { key: 'new' } },
      priority: { id: '3', name: 'Medium' },
      reporter: jiraUser,
      assignee: null,
      created: at,
      updated: at,
    },
  };
};

const jira: Row = {
  name: 'jira',
  credential: 'secret',
  // The secret entered (or generated) for the webhook.
  newSecret: () => randomSecret(32),
  // X-Atlassian-Webhook-Identifier: the same on every retry, unsigned.
  newId: uuid,
  samples: {
    'jira:issue_created': (ctx) => ({
      timestamp: ctx.at.getTime(),
      webhookEvent: 'jira:issue_created',
      issue_event_type_name: 'issue_created',
      user: jiraUser,
      issue: jiraIssue(ctx),
    }),
    'jira:issue_updated': (ctx) => ({
      timestamp: ctx.at.getTime(),
      webhookEvent: 'jira:issue_updated',
      issue_event_type_name: 'issue_generic',
      user: jiraUser,
      issue: jiraIssue(ctx),
      changelog: {
        id: randomDigits(5),
        items: [
          {
            field: 'status',
            fieldtype: 'jira',
            from: '10000',
            fromString: 'To Do',
            to: '3',
            toString: 'In Progress',
          },
        ],
      },
    }),
    comment_created: (ctx) => ({
      timestamp: ctx.at.getTime(),
      webhookEvent: 'comment_created',
      comment: {
        id: randomDigits(5),
        author: jiraUser,
        body: 'Reproduced on the second column.',
        created: ctx.iso.replace('Z', '+0000'),
        updated: ctx.iso.replace('Z', '+0000'),
      },
      issue: jiraIssue(ctx),
    }),
  },
  // X-Hub-Signature: sha256=<hex HMAC-SHA256 of the body> (WebSub's method=signature).
  sign: bodyHmac({
    header: 'x-hub-signature',
    encoding: 'hex',
    prefix: 'sha256=',
    headers: ({ id }) => ({
      'x-atlassian-webhook-identifier': id,
      'x-atlassian-webhook-retry': '0',
      'x-atlassian-webhook-flow': 'Primary',
    }),
  }),
};

// --- Lemon Squeezy ---------------------------------------------------------------------------

const lemonEvent =
  (data: (ctx: SampleContext) => Record<string, unknown>) =>
  (ctx: SampleContext): Record<string, unknown> => ({
    meta: { test_mode: true, event_name: ctx.type, webhook_id: uuid() },
    data: data(ctx),
  });

const lemonOrder = (ctx: SampleContext) => ({
  type: 'orders',
  id: ctx.id,
  attributes: {
    store_id: 12345,
    customer_id: 67890,
    identifier: uuid(),
    order_number: Number(randomDigits(4)),
    user_name: 'Ada Lovelace',
    user_email: 'ada@example.com',
    currency: 'USD',
    subtotal: 999,
    total: 999,
    status: 'paid',
    refunded: false,
    test_mode: true,
    created_at: ctx.iso,
    updated_at: ctx.iso,
  },
  links: { self: `https://api.lemonsqueezy.com/v1/orders/${ctx.id}` },
});

const lemonSubscription = (ctx: SampleContext) => ({
  type: 'subscriptions',
  id: ctx.id,
  attributes: {
    store_id: 12345,
    customer_id: 67890,
    order_id: Number(randomDigits(7)),
    product_name: 'Engine Pro',
    variant_name: 'Monthly',
    user_name: 'Ada Lovelace',
    user_email: 'ada@example.com',
    status: 'active',
    renews_at: new Date(ctx.at.getTime() + 30 * 86_400_000).toISOString(),
    ends_at: null,
    test_mode: true,
    created_at: ctx.iso,
    updated_at: ctx.iso,
  },
  links: { self: `https://api.lemonsqueezy.com/v1/subscriptions/${ctx.id}` },
});

const lemonSqueezy: Row = {
  name: 'lemonSqueezy',
  credential: 'secret',
  // The signing secret typed in when creating the webhook (6 to 40 characters).
  newSecret: () => randomSecret(24),
  // No event id: the id is the object's (`data.id`, numeric).
  newId: () => randomDigits(7),
  samples: {
    order_created: lemonEvent(lemonOrder),
    subscription_created: lemonEvent(lemonSubscription),
    subscription_payment_success: lemonEvent((ctx) => ({
      type: 'subscription-invoices',
      id: ctx.id,
      attributes: {
        store_id: 12345,
        subscription_id: Number(randomDigits(6)),
        billing_reason: 'renewal',
        currency: 'USD',
        status: 'paid',
        total: 999,
        test_mode: true,
        created_at: ctx.iso,
        updated_at: ctx.iso,
      },
      links: { self: `https://api.lemonsqueezy.com/v1/subscription-invoices/${ctx.id}` },
    })),
  },
  // X-Signature: <hex HMAC-SHA256 of the body, keyed with the signing secret>.
  sign: bodyHmac({
    header: 'x-signature',
    encoding: 'hex',
    headers: ({ type }) => ({ 'x-event-name': type }),
  }),
};

export const rows: readonly Row[] = [airtable, asana, dropbox, intercom, jira, lemonSqueezy];
