/**
 * Fastify 5: `app.register(webhook(receiver), { prefix: '/webhooks' })`.
 *
 * The plugin is encapsulated on purpose (no `fastify-plugin`): inside its own scope it removes every
 * content-type parser and installs one that hands the route the unread payload stream, so the route
 * reads the exact bytes itself with the `maxBodyBytes` bound, while the app's JSON parser and any
 * other parser stay untouched everywhere else.
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import {
  type NodeReply,
  nodeBytes,
  nodeRawBody,
  nodeUrl,
  type Provider,
  type ReceiverInput,
  toNodeReply,
  toReceiver,
} from './node-io.js';

export { BodyAlreadyParsedError, type ReceiverInput } from './node-io.js';

const FIX =
  'register the webhook plugin before (or outside the scope of) the hook that reads the request payload';

export interface FastifyWebhookOptions {
  /**
   * The route's path inside the plugin's scope; with `register(..., { prefix })` leave it `'/'`.
   * @default '/'
   * @example { path: '/webhooks/github' }
   */
  path?: string;
}

/**
 * A Fastify plugin with one route (`POST`, and `GET` for a provider's handshake) that receives a webhook safely: reads the raw body with the
 * `maxBodyBytes` bound (413 before buffering more, with or without Content-Length), verifies,
 * dedups, runs your handler, and answers with the outcome (or your handler's own `Response`).
 * Takes a receiver or the options to create one.
 *
 * @example
 * await app.register(webhook({ provider: github({ secret }), store, handler }), { prefix: '/webhooks' });
 */
export function webhook<P extends Provider<any, any>>(
  receiver: ReceiverInput<P>,
  options: FastifyWebhookOptions = {},
): FastifyPluginAsync {
  const r = toReceiver(receiver);
  const path = options.path ?? '/';
  return async (instance) => {
    // Only this plugin's scope: the app's parsers are cloned into it, so removing them here leaves
    // the app's own routes as they were.
    instance.removeAllContentTypeParsers();
    instance.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    // POST for deliveries, GET for a provider's handshake (Meta's hub.challenge); the core refuses a
    // GET that is not one with 405.
    instance.route({
      method: ['GET', 'POST'],
      url: path,
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        const kept = (request as { rawBody?: unknown }).rawBody;
        const payload = request.body as IncomingMessage | undefined;
        const rawBody =
          payload === undefined || payload === null
            ? kept instanceof Uint8Array
              ? kept
              : new Uint8Array(0)
            : nodeRawBody(payload, FIX, [kept]);
        const result = await r.receive({
          rawBody,
          headers: request.headers,
          url: nodeUrl(request.raw),
          method: request.method,
        });
        // Synchronous for the outcome JSON: no await (one microtask less per answer).
        const out = toNodeReply(result, request.raw);
        return send(reply, out instanceof Promise ? await out : out);
      },
    });
  };
}

function send(reply: FastifyReply, { status, headers, body }: NodeReply): FastifyReply {
  reply.code(status);
  reply.headers(headers);
  // Bytes, not text: Fastify runs text through the reply's serializer, which an app hook may have
  // set. (Text would go out in one write with the header block, bytes as a second chunk of a
  // writev; paired runs measured no difference, and the identity serializer text needs has to be
  // taken off the reply again before the app's error handler may use it.)
  return reply.send(nodeBytes(body));
}
