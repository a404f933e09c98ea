/**
 * A bare `node:http` request listener: `createServer(webhook(receiver))`. Also a connect-style
 * middleware (`(req, res, next)`), which forwards errors to `next`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  nodeRawBody,
  OnceonlyError,
  type Provider,
  type ReceiverInput,
  receiveNode,
  toReceiver,
  writeNodeReply,
  writeResult,
} from './node-io.js';

export { BodyAlreadyParsedError, type ReceiverInput } from './node-io.js';

const FIX = 'hand the request to the webhook listener before anything reads its body';

/**
 * A `node:http` request listener that receives a webhook safely: reads the raw body with the
 * `maxBodyBytes` bound (413 before buffering more), verifies, dedups, runs your handler, and writes
 * the outcome. Takes a receiver or the options to create one. Given a third `next` argument it acts
 * as connect-style middleware and passes errors on; without one it answers them itself (500 with a
 * stable `code`, and the error on `onError`).
 *
 * @example
 * createServer(webhook({ provider: github({ secret }), store, handler })).listen(3000);
 */
export function webhook<P extends Provider<any, any>>(
  receiver: ReceiverInput<P>,
  options: NodeWebhookOptions = {},
): (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => void {
  const r = toReceiver(receiver);
  return (req, res, next) => {
    handle(req, res).catch((error: unknown) => {
      if (next) return next(error);
      options.onError?.(error);
      const code = error instanceof OnceonlyError ? error.code : 'internal_error';
      const message =
        error instanceof OnceonlyError ? error.message : 'onceonly: the webhook listener failed';
      writeNodeReply(res, {
        status: 500,
        headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
        body: new TextEncoder().encode(JSON.stringify({ code, message })),
      });
    });
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Every method reaches the core: a GET may be the provider's handshake, the rest is 405 there.
    const raw = nodeRawBody(req, FIX, [(req as { rawBody?: unknown }).rawBody]);
    const result = await receiveNode(r, req, raw);
    return writeResult(res, result, req);
  }
}

export interface NodeWebhookOptions {
  /**
   * Called with an error the listener answered 500 itself (no `next`): a body another layer already
   * read, or a failure writing the response. Delivery outcomes go to the receiver's `onOutcome`.
   * @default undefined (not reported)
   * @example { onError: (error) => console.error(error) }
   */
  onError?: (error: unknown) => void;
}
