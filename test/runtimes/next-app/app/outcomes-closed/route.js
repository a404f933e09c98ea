import { webhook } from '../../../../../src/adapters/next.ts';
import { state } from '../state.js';

// The Stripe outcome receiver, fail-closed (test/adapters/outcomes.ts).
export const POST = webhook(state().outcomeClosed.receiver);
