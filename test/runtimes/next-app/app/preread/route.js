import { webhook } from '../../../../../src/adapters/next.ts';
import { state } from '../state.js';

const receive = webhook(state().receiver);

// A route that parses the body itself before handing the request over: the mistake the adapter names.
export async function POST(request) {
  await request.json();
  return receive(request);
}
