/**
 * Hono 4, on Node (`@hono/node-server`) and on the web-standard runtimes (Bun, Deno, Workers):
 * `app.post('/webhooks', webhook(receiver))`. The route hands `c.req.raw` to the receiver's
 * web-standard `fetch`, so the body is read once, with the `maxBodyBytes` bound.
 */
import { answerOf } from '../receiver/adapter-kit.js';
import { closeIfRefused, type Provider, type ReceiverInput, toReceiver, unreadable } from './web-io.js';

export { BodyAlreadyParsedError, type ReceiverInput } from './web-io.js';

const FIX =
  'register app.post(path, webhook(...)) above the middleware that reads the body (c.req.json(), a validator)';

/** The Hono context as far as the adapter needs it. */
export interface HonoContext {
  readonly req: {
    readonly raw: Request;
    // Typed as values, held as promises at run time: awaited either way.
    readonly bodyCache?: { readonly arrayBuffer?: unknown; readonly blob?: unknown };
  };
}

/**
 * A Hono handler that receives a webhook safely: verifies over the raw bytes, dedups, runs your
 * handler, and answers with the outcome (or your handler's own `Response`). If a middleware already
 * read the body as bytes (`c.req.arrayBuffer()`), those exact bytes are used; if it parsed it
 * (`c.req.json()`, `c.req.text()`, a validator), the exact bytes are gone and the delivery fails with
 * `body_already_parsed` (500, through the core: outcome headers and `onOutcome`) naming the line to move. Takes a receiver or
 * the options to create one.
 *
 * @example
 * app.post('/webhooks', webhook({ provider: github({ secret }), store, handler }));
 * // A provider that verifies the endpoint with a GET (Meta's hub.challenge): route GET too.
 * app.on(['GET', 'POST'], '/webhooks', webhook(receiver));
 */
export function webhook<P extends Provider<any, any>>(
  receiver: ReceiverInput<P>,
): (c: HonoContext) => Promise<Response> {
  const r = toReceiver(receiver);
  return async (c) => {
    const request = c.req.raw;
    if (!request.bodyUsed) return closeIfRefused(await r.fetch(request));
    const cache = c.req.bodyCache;
    const kept = cache?.arrayBuffer
      ? new Uint8Array((await cache.arrayBuffer) as ArrayBuffer)
      : cache?.blob
        ? new Uint8Array(await ((await cache.blob) as Blob).arrayBuffer())
        : undefined;
    if (request.method !== 'POST') {
      // A handshake reads the URL and headers only.
      return r.fetch(new Request(request.url, { method: request.method, headers: request.headers }));
    }
    // Parsed, not kept: the core answers 500 body_already_parsed naming the fix.
    const result = await r.receive({
      rawBody: kept ?? unreadable(FIX),
      headers: request.headers,
      url: request.url,
    });
    return answerOf(result);
  };
}
