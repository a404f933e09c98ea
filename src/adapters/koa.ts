/**
 * Koa 2 and 3: `app.use(webhook(receiver, { path: '/webhooks' }))` above the body parser, or
 * `router.post('/webhooks', webhook(receiver))` with a router.
 */
import type { IncomingMessage } from 'node:http';
import {
  type NodeReply,
  nodeBody,
  nodeRawBody,
  type Provider,
  type ReceiverInput,
  receiveNode,
  toNodeReply,
  toReceiver,
} from './node-io.js';

export { BodyAlreadyParsedError, type ReceiverInput } from './node-io.js';

const FIX = 'register app.use(webhook(...)) above app.use(bodyParser())';

/** The Koa context as far as the adapter needs it (Koa 2 and 3 alike). */
export interface KoaContext {
  readonly req: IncomingMessage;
  readonly request: { readonly body?: unknown; readonly rawBody?: unknown };
  readonly method: string;
  readonly path: string;
  /** The URL the request arrived with, before a mount rewrote it. */
  readonly originalUrl?: string;
  status: number;
  body: unknown;
  set(field: string, value: string | string[]): void;
}

export interface KoaWebhookOptions {
  /**
   * Handle only this path and pass every other request on, so the middleware can go in the
   * app's chain (above the body parser) without a router. Without it, every request reaching the
   * middleware is treated as a webhook delivery.
   * @default undefined (every request)
   * @example { path: '/webhooks' }
   */
  path?: string;
}

/**
 * Koa middleware that receives a webhook safely: reads the raw body with the `maxBodyBytes` bound
 * (413 before buffering more), verifies, dedups, runs your handler, and answers with the outcome.
 * A body parser that ran first leaves no exact bytes, so that is refused with `body_already_parsed`
 * (500 through the core: outcome headers and `onOutcome`) naming the line to move. Takes a receiver or the
 * options to create one.
 *
 * @example
 * app.use(webhook({ provider: github({ secret }), store, handler }, { path: '/webhooks' }));
 * app.use(bodyParser());
 * // With a router, route GET too for a provider's handshake: router.all('/webhooks', webhook(receiver))
 */
export function webhook<P extends Provider<any, any>>(
  receiver: ReceiverInput<P>,
  options: KoaWebhookOptions = {},
): (ctx: KoaContext, next: () => Promise<unknown>) => Promise<void> {
  const r = toReceiver(receiver);
  return async (ctx, next) => {
    if (options.path !== undefined && ctx.path !== options.path) {
      await next();
      return;
    }
    // Every method reaches the core: a GET may be the provider's handshake, the rest is 405 there.
    const raw = nodeRawBody(ctx.req, FIX, [ctx.request.rawBody]);
    // The URL the request arrived with (koa-mount rewrites ctx.req.url): providers sign it.
    const result = await receiveNode(r, ctx.req, raw, ctx.originalUrl);
    reply(ctx, await toNodeReply(result, ctx.req));
  };
}

function reply(ctx: KoaContext, { status, headers, body }: NodeReply): void {
  ctx.status = status;
  for (const [name, value] of Object.entries(headers)) ctx.set(name, value);
  ctx.body = nodeBody(body);
}
