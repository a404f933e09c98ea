/**
 * Express 5 and 4: `app.post('/webhooks', webhook(receiver))`.
 *
 * The route reads the request stream itself, so it gets the exact bytes when it is registered before
 * any global body parser. Where the app kept the raw bytes (`express.raw()` in front of the route, or
 * a `verify` callback that stores `req.rawBody`), those are used. When a parser consumed the body
 * and kept nothing, the delivery is answered 500 `body_already_parsed` by the core (outcome headers,
 * `onOutcome`) with a message naming the line to move, instead of a confusing signature mismatch.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  nodeRawBody,
  type Provider,
  type ReceiverInput,
  receiveNode,
  toReceiver,
  writeResult,
} from './node-io.js';

export { BodyAlreadyParsedError, type ReceiverInput } from './node-io.js';

const FIX =
  'register the webhook route above app.use(express.json()) (or above whichever body parser runs first)';

/** The Express request as far as the adapter needs it: a Node request, perhaps with a parsed body. */
type ExpressRequest = IncomingMessage & { body?: unknown; rawBody?: unknown };

/**
 * An Express route handler (Express 4 and 5) that receives a webhook safely: reads the raw body with
 * the `maxBodyBytes` bound, verifies, dedups, runs your handler, and answers with the outcome.
 * Takes a receiver or the options to create one.
 *
 * @example
 * app.post('/webhooks', webhook({ provider: github({ secret }), store, handler }));
 * app.use(express.json()); // after the webhook route
 *
 * // A provider that verifies the endpoint with a GET (Meta's hub.challenge): route GET too.
 * app.all('/webhooks', webhook(receiver));
 */
export function webhook<P extends Provider<any, any>>(
  receiver: ReceiverInput<P>,
): (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void {
  const r = toReceiver(receiver);
  return (req, res, next) => {
    // Express 4 ignores a rejected promise, so errors go to next() explicitly.
    handle(req as ExpressRequest, res).catch(next);
  };

  async function handle(req: ExpressRequest, res: ServerResponse): Promise<void> {
    // Every method reaches the core: a GET may be the provider's handshake, the rest is 405 there.
    const raw = nodeRawBody(req, FIX, [req.body, req.rawBody]);
    const result = await receiveNode(r, req, raw);
    return writeResult(res, result, req);
  }
}
