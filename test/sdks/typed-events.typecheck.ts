/**
 * Type test, checked by `npm run typecheck` through test/sdks/tsconfig.json (never run): typed `on` handlers narrow
 * the event by name for Stripe, GitHub and every sender whose payload types are published on npm
 * (Mux, Postmark, Notion, Telegram, Adyen, Resend, the Standard Webhooks senders), and a wrong event
 * name or field fails to compile. Every
 * `@ts-expect-error` below is itself checked: if the line compiled, tsc would report the directive
 * as unused.
 */
import type { Types as AdyenTypes } from '@adyen/api-library';
import type { WebhookMergeRequestEventSchema, WebhookPushEventSchema } from '@gitbeaker/core';
import type { Update } from '@grammyjs/types';
import type Mux from '@mux/mux-node';
import type { CommentCreatedWebhookPayload, PageCreatedWebhookPayload } from '@notionhq/client';
import type { WebhookEventMap } from '@octokit/webhooks-types';
import type { Models as PostmarkModels } from 'postmark';
import type { WebhookEventPayload } from 'resend';
import type Stripe from 'stripe';
import { createReceiver, memoryStore } from '../../src/index.js';
import {
  adyen,
  clerk,
  github,
  gitlab,
  mux,
  notion,
  postmark,
  resend,
  standardWebhooks,
  stripe,
  telegram,
} from '../../src/providers/index.js';
import type { EventMapOf } from '../../src/providers/types.js';

export function typedStripe(): void {
  createReceiver({
    provider: stripe<Stripe.Event>({ secret: 'whsec_typecheck' }),
    store: memoryStore(),
    on: {
      'invoice.paid': ({ event }) => {
        const invoice: Stripe.Invoice = event.data.object;
        const type: 'invoice.paid' = event.type;
        // @ts-expect-error: invoice.paid carries an invoice, not a customer
        const customer: Stripe.Customer = event.data.object;
        return [invoice, type, customer];
      },
      'customer.subscription.deleted': ({ event }) => {
        const subscription: Stripe.Subscription = event.data.object;
        return subscription;
      },
      // @ts-expect-error: not a Stripe event name
      'invoice.payed': () => undefined,
    },
  });
}

export function untypedStripe(): void {
  // Without the type argument, any name is accepted and the event has Stripe's common shape.
  createReceiver({
    provider: stripe({ secret: 'whsec_typecheck' }),
    store: memoryStore(),
    on: {
      'anything.at.all': ({ event }) => {
        const id: string = event.id;
        const object: Record<string, unknown> = event.data.object;
        return [id, object];
      },
    },
  });
}

export function typedGithub(): void {
  createReceiver({
    provider: github<WebhookEventMap>({ secret: 'typecheck' }),
    store: memoryStore(),
    on: {
      push: ({ event }) => {
        const after: string = event.after;
        // @ts-expect-error: a push event has no pull_request
        return [after, event.pull_request];
      },
      pull_request: ({ event }) => {
        const number: number = event.pull_request.number;
        return number;
      },
      // @ts-expect-error: not a GitHub event name
      pushh: () => undefined,
    },
  });
}

type ClerkLike =
  | { type: 'user.created'; data: { id: string; email: string } }
  | { type: 'session.ended'; data: { session_id: string } };

export function typedStandardWebhooks(): void {
  createReceiver({
    provider: standardWebhooks<ClerkLike>({ secret: 'whsec_dHlwZWNoZWNr', name: 'clerk' }),
    store: memoryStore(),
    on: {
      'user.created': ({ event }) => {
        const email: string = event.data.email;
        // @ts-expect-error: user.created has no session_id
        return [email, event.data.session_id];
      },
      // @ts-expect-error: not one of the union's names
      'user.deleted': () => undefined,
    },
  });
  // Without a union, any name is accepted.
  createReceiver({
    provider: standardWebhooks({ secret: 'whsec_dHlwZWNoZWNr' }),
    store: memoryStore(),
    on: { 'anything.at.all': ({ event }) => event.type },
  });
}

// The provider's map carries the names themselves.
type StripeMap = EventMapOf<ReturnType<typeof stripe<Stripe.Event>>>;
export const invoicePaid: keyof StripeMap = 'invoice.paid';
// @ts-expect-error: not a key of the map
export const misspelt: keyof StripeMap = 'invoice.payed';
type GithubMap = EventMapOf<ReturnType<typeof github<WebhookEventMap>>>;
export const issues: keyof GithubMap = 'issues';

// Group A (issue 15 part B): the named Standard Webhooks senders take the sender's union the same
// way (Clerk's `WebhookEvent` from @clerk/backend; here a union of its shape).
export function typedClerk(): void {
  createReceiver({
    provider: clerk<ClerkLike>({ secret: 'whsec_dHlwZWNoZWNr' }),
    store: memoryStore(),
    on: {
      'user.created': ({ event }) => {
        const email: string = event.data.email;
        // @ts-expect-error: user.created has no session_id
        return [email, event.data.session_id];
      },
      // @ts-expect-error: not one of the union's names
      'user.deleted': () => undefined,
    },
  });
  createReceiver({
    provider: resend({ secret: 'whsec_dHlwZWNoZWNr' }),
    store: memoryStore(),
    on: { 'email.bounced': ({ event }) => event.type },
  });
}

// Issue 15, typed events where the sender publishes its payload types on npm: each provider takes
// the package's own type (types only) and narrows handlers by the sender's event name.

export function typedMux(): void {
  createReceiver({
    provider: mux<Mux.Webhooks.UnwrapWebhookEvent>({ secret: 'typecheck' }),
    store: memoryStore(),
    on: {
      'video.asset.ready': ({ event }) => {
        const asset: Mux.Webhooks.WebhookAsset = event.data;
        const type: 'video.asset.ready' = event.type;
        // @ts-expect-error: an asset event carries an asset, not a live stream
        const stream: Mux.Webhooks.WebhookLiveStream = event.data;
        return [asset, type, stream];
      },
      // @ts-expect-error: not a Mux event name
      'video.asset.readied': () => undefined,
    },
  });
  // Without the type argument, any name is accepted and the event has Mux's common shape.
  createReceiver({
    provider: mux({ secret: 'typecheck' }),
    store: memoryStore(),
    on: { 'anything.at.all': ({ event }) => event.id },
  });
}

type PostmarkWebhook =
  | PostmarkModels.BounceWebhook
  | PostmarkModels.DeliveryWebhook
  | PostmarkModels.OpenWebhook
  | PostmarkModels.ClickWebhook
  | PostmarkModels.SpamComplaintWebhook
  | PostmarkModels.SubscriptionChangeWebhook;

export function typedPostmark(): void {
  createReceiver({
    provider: postmark<PostmarkWebhook>({ secret: 'user:typecheck' }),
    store: memoryStore(),
    on: {
      Bounce: ({ event }) => {
        const email: string = event.Email;
        // @ts-expect-error: a bounce record has no DeliveredAt
        return [email, event.DeliveredAt];
      },
      Delivery: ({ event }) => {
        const at: string = event.DeliveredAt;
        return at;
      },
      // @ts-expect-error: not a Postmark RecordType
      Bounced: () => undefined,
    },
  });
  createReceiver({
    provider: postmark({ secret: 'user:typecheck' }),
    store: memoryStore(),
    on: { Anything: ({ event }) => event.RecordType },
  });
}

export function typedNotion(): void {
  createReceiver({
    provider: notion<PageCreatedWebhookPayload | CommentCreatedWebhookPayload>({
      secret: 'secret_typecheck',
    }),
    store: memoryStore(),
    on: {
      'page.created': ({ event }) => {
        const entity: 'page' = event.entity.type;
        // @ts-expect-error: page.created carries no page_id in its data (comment.created does)
        return [entity, event.data.page_id];
      },
      'comment.created': ({ event }) => event.data.page_id,
      // @ts-expect-error: not one of the union's names
      'page.deleted': () => undefined,
    },
  });
}

export function typedTelegram(): void {
  createReceiver({
    provider: telegram<Update>({ secret: 'typecheck' }),
    store: memoryStore(),
    on: {
      callback_query: ({ event }) => {
        // The kind's field is present (not optional) in its own handler.
        const id: string = event.callback_query.id;
        const update: number = event.update_id;
        // @ts-expect-error: a callback query has no text (its message may)
        return [id, update, event.callback_query.text];
      },
      message: ({ event }) => event.message.chat.id,
      // @ts-expect-error: not a kind of update
      messages: () => undefined,
    },
  });
  createReceiver({
    provider: telegram({ secret: 'typecheck' }),
    store: memoryStore(),
    on: { anything: ({ event }) => event.update_id },
  });
}

type TelegramMap = EventMapOf<ReturnType<typeof telegram<Update>>>;
export const editedMessage: keyof TelegramMap = 'edited_message';
// @ts-expect-error: update_id is the update's id, not a kind of update
export const notAKind: keyof TelegramMap = 'update_id';

export function typedAdyen(): void {
  createReceiver({
    provider: adyen<AdyenTypes.notification.NotificationRequestItem>({ secret: 'AABBCCDD' }),
    store: memoryStore(),
    on: {
      AUTHORISATION: ({ event }) => {
        const reference: string = event.pspReference;
        // @ts-expect-error: not a field of a notification item
        return [reference, event.pspRef];
      },
      // @ts-expect-error: Adyen spells it AUTHORISATION
      AUTHORIZATION: () => undefined,
    },
  });
  createReceiver({
    provider: adyen({ secret: 'AABBCCDD' }),
    store: memoryStore(),
    on: { ANYTHING: ({ event }) => event.pspReference },
  });
}

export function typedResend(): void {
  createReceiver({
    provider: resend<WebhookEventPayload>({ secret: 'whsec_dHlwZWNoZWNr' }),
    store: memoryStore(),
    on: {
      'email.bounced': ({ event }) => {
        const type: 'email.bounced' = event.type;
        return [type, event.data.email_id];
      },
      // @ts-expect-error: not a Resend event name
      'email.bounce': () => undefined,
    },
  });
}

// GitLab names its events in the unsigned X-Gitlab-Event header, as GitHub does: a map of those names
// onto @gitbeaker/core's payload schemas.
interface GitlabEvents {
  'Push Hook': WebhookPushEventSchema;
  'Merge Request Hook': WebhookMergeRequestEventSchema;
}

export function typedGitlab(): void {
  createReceiver({
    provider: gitlab<GitlabEvents>({ secret: 'typecheck' }),
    store: memoryStore(),
    on: {
      'Push Hook': ({ event }) => {
        const sha: string = event.checkout_sha;
        // @ts-expect-error: a push carries no merge request attributes
        return [sha, event.object_attributes];
      },
      'Merge Request Hook': ({ event }) => event.object_attributes.iid,
      // @ts-expect-error: not one of the map's names
      'Push Hooks': () => undefined,
    },
  });
  createReceiver({
    provider: gitlab({ secret: 'typecheck' }),
    store: memoryStore(),
    on: { 'Tag Push Hook': ({ event }) => event.object_kind },
  });
}
