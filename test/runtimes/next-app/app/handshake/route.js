import { webhook } from '../../../../../src/adapters/next.ts';
import { state } from '../state.js';

// A provider that verifies the endpoint with a GET (a hub.challenge) and a POST (X-Hook-Secret):
// the same handler exported for both methods, as the adapter's docs say.
const handle = webhook(state().handshake.receiver);

export { handle as GET, handle as POST };
