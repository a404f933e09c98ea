/**
 * Type test, checked by `npx tsc -p tsconfig.json --noEmit` (never run): typed `on` handlers narrow
 * the event by name for Stripe and GitHub, and a wrong event name fails to compile. Every
 * `@ts-expect-error` below is itself checked: if the line compiled, tsc would report the directive
 * as unused.
 */
import type { WebhookEventMap } from '@octokit/webhooks-types';
import type Stripe from 'stripe';
import { createReceiver, memoryStore } from '../../src/index.js';
import { github, standardWebhooks, stripe } from '../../src/providers/index.js';
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
