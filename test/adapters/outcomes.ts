/**
 * A second receiver for the adapter suites, keyed on a signed event id (Stripe, signed as Stripe
 * signs: test/support/stripe-signature.ts), whose store can be switched off, so every
 * outcome of the core's table can be driven through each framework. Free of `node:test`, so the
 * Next.js fixture app can load it too.
 */
import {
  createReceiver,
  type DeliveryResult,
  memoryStore,
  type Receiver,
  type Store,
  StoreUnavailableError,
} from '../../src/index.js';
import { stripe } from '../../src/providers/index.js';
import { stripeSignature } from '../support/stripe-signature.js';
import { wrapStore } from '../support/wrap-store.js';
import { MAX_BODY } from './behaviour.js';

export const STRIPE_SECRET = 'whsec_adapterOutcomeSuiteSecret0123456789';
/** Short, so a trickled body is refused quickly. */
export const BODY_TIMEOUT_MS = 400;

/** A Stripe delivery, signed as Stripe signs it. */
export function stripeDelivery(event: { id: string; type: string; note?: string }): {
  body: string;
  headers: Record<string, string>;
} {
  const body = JSON.stringify({ object: 'event', data: { object: {} }, ...event });
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'stripe-signature': stripeSignature(body, STRIPE_SECRET),
    },
  };
}

/** A memory store that fails every call while `down` is set, as an unreachable server would. */
export interface SwitchableStore extends Store {
  down: boolean;
}

function switchable(inner: Store): SwitchableStore {
  const state = { down: false };
  const store = wrapStore(inner, () => {
    if (state.down) throw new StoreUnavailableError('onceonly: the test switched the store off');
  });
  return Object.defineProperty(store, 'down', {
    get: () => state.down,
    set: (down: boolean) => {
      state.down = down;
    },
  }) as SwitchableStore;
}

export interface OutcomeFixture {
  receiver: Receiver;
  store: SwitchableStore;
  outcomes: DeliveryResult[];
}

/**
 * `invoice.paid` has a handler; any other type is `ignored`. Fail-closed unless `open`.
 */
export function outcomeFixture(onStoreError: 'closed' | 'open' = 'closed'): OutcomeFixture {
  const store = switchable(memoryStore());
  const outcomes: DeliveryResult[] = [];
  const receiver = createReceiver({
    provider: stripe({ secret: STRIPE_SECRET }),
    store,
    onStoreError,
    maxBodyBytes: MAX_BODY,
    bodyTimeout: BODY_TIMEOUT_MS,
    on: { 'invoice.paid': () => undefined },
    onOutcome: (result) => {
      outcomes.push(result);
    },
  });
  return { receiver, store, outcomes };
}
