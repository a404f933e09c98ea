/** The delivery every inbox accept bench writes: a 2 KiB body with Stripe-like headers, every key new. */
import { randomBytes } from 'node:crypto';
import type { InboxAcceptInput } from '../../src/core/inbox.js';

export const body = randomBytes(2048);
export const headers: [string, string][] = [
  ['content-type', 'application/json'],
  ['stripe-signature', `t=1764000000,v1=${'a'.repeat(64)}`],
  ['user-agent', 'Stripe/1.0 (+https://stripe.com/docs/webhooks)'],
  ['content-length', '2048'],
];
export const fingerprint = 'f'.repeat(64);
export const TYPE = 'payment_intent.succeeded';
/** The event id within a key (`space:id`). */
export const idOf = (key: string): string => key.slice(key.indexOf(':') + 1);

/** The accept input of one delivery under `key`. */
export const inboxInput = (key: string, receiver: string): InboxAcceptInput => ({
  key,
  receiver,
  fingerprint,
  type: TYPE,
  id: idOf(key),
  body,
  headers,
  url: undefined,
  receivedAt: new Date(),
});
