import { webhook } from '../../../../../src/adapters/next.ts';
import { state } from '../state.js';

// The same receiver as /webhooks, on a path the app's proxy does not match: Next hands the route the
// unread body stream (a matching proxy makes Next buffer the body first, up to 10 MB).
export const POST = webhook(state().receiver);
