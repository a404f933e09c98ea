/**
 * Next.js App Router route handlers: `export const POST = webhook(receiver)` in
 * `app/<path>/route.ts`. The handler is the receiver's web-standard `fetch`: the request body is
 * read once, as bytes, with the `maxBodyBytes` bound. Route handlers get the untouched request (Next
 * parses nothing for them), so no body-parser setting is needed.
 */
import { toResponse } from '../receiver/adapter-kit.js';
import { closeIfRefused, type Provider, type ReceiverInput, toReceiver, unreadable } from './web-io.js';

export { BodyAlreadyParsedError, type ReceiverInput } from './web-io.js';

const FIX =
  'export the handler itself (export const POST = webhook(...)), or pass it the request before reading it';

/**
 * A Next.js App Router `POST` handler that receives a webhook safely: verifies over the raw bytes,
 * dedups, runs your handler, and answers with the outcome (or your handler's own `Response`). Takes
 * a receiver or the options to create one. Runs on the Node.js runtime (the default).
 *
 * @example
 * // app/webhooks/github/route.ts
 * export const POST = webhook({ provider: github({ secret: process.env.GITHUB_WEBHOOK_SECRET! }), store, handler });
 *
 * // A provider that verifies the endpoint with a GET (Meta's hub.challenge): export GET too.
 * const handle = webhook(receiver);
 * export { handle as GET, handle as POST };
 */
export function webhook<P extends Provider<any, any>>(
  receiver: ReceiverInput<P>,
): (request: Request) => Promise<Response> {
  const r = toReceiver(receiver);
  return async (request) => {
    // Reading the body before handing the request over leaves nothing exact to verify: the core
    // answers 500 body_already_parsed naming the fix.
    if (request.bodyUsed) {
      return toResponse(
        await r.receive({ rawBody: unreadable(FIX), headers: request.headers, url: request.url }),
      );
    }
    return closeIfRefused(await r.fetch(request));
  };
}
