import { webhook } from '../../../../../src/adapters/next.ts';
import { state } from '../state.js';

// The Stripe outcome receiver, fail-open (test/adapters/outcomes.ts).
export const POST = webhook(state().outcomeOpen.receiver);
