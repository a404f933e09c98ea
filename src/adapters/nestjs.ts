/**
 * NestJS 11, on the Express and the Fastify platform: `OnceonlyModule.register({ path, ...
 * options })` (or `registerAsync` to build the options from injected services) adds a `POST` route
 * (and a `GET` one, for a provider's verification handshake) to the app; `webhook(options)` is the same as a function for a controller method of your own.
 *
 * Nest's own body parsers run before every controller. With `NestFactory.create(AppModule,
 * { rawBody: true })` they keep the exact bytes on `req.rawBody`, and those are verified; with
 * `bodyParser: false` (or a content type Nest does not parse) the route reads the request stream
 * itself with the `maxBodyBytes` bound. Without either, the bytes are gone, and the delivery ends as
 * `body_already_parsed` (500 through the core: outcome headers and `onOutcome`) naming that option
 * instead of a confusing signature mismatch.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  Controller,
  type DynamicModule,
  type FactoryProvider,
  Get,
  Inject,
  Module,
  Post,
  Req,
  Res,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Receiver } from '../receiver/adapter-kit.js';
import {
  type NodeReply,
  nodeBytes,
  nodeRawBody,
  type Provider,
  type ReceiverInput,
  receiveNode,
  toNodeReply,
  toReceiver,
  writeNodeReply,
} from './node-io.js';

export { BodyAlreadyParsedError, type ReceiverInput } from './node-io.js';

const FIX = 'create the app with NestFactory.create(AppModule, { rawBody: true })';

/** The request a Nest route gets: Node's (Express platform) or Fastify's, which wraps it in `raw`. */
export type NestRequest = IncomingMessage | { readonly raw: IncomingMessage };

/** The response a Nest route gets with `@Res()`: Node's (Express platform) or Fastify's reply. */
export type NestResponse =
  | ServerResponse
  | {
      readonly raw: ServerResponse;
      code(status: number): unknown;
      header(name: string, value: string | string[]): unknown;
      send(payload: Uint8Array | string): unknown;
    };

/**
 * A function for a Nest controller method that receives a webhook safely: verifies over the raw
 * bytes, dedups, runs your handler, and writes the outcome (or your handler's own `Response`) to the
 * response, so the method takes `@Res()`. Takes a receiver or the options to create one. Works on
 * the Express and the Fastify platform.
 *
 * @example
 * const receive = webhook({ provider: github({ secret }), store, handler });
 *
 * @Controller('webhooks')
 * export class WebhooksController {
 *   @Post()
 *   handle(@Req() req: RawBodyRequest<Request>, @Res() res: Response) {
 *     return receive(req, res);
 *   }
 *   // For a provider that verifies the endpoint with a GET (Meta's hub.challenge):
 *   @Get()
 *   handshake(@Req() req: Request, @Res() res: Response) {
 *     return receive(req, res);
 *   }
 * }
 */
export function webhook<P extends Provider<any, any>>(
  receiver: ReceiverInput<P>,
): (req: NestRequest, res: NestResponse) => Promise<void> {
  const r = toReceiver(receiver);
  return async (req, res) => {
    const fastify = 'raw' in req && isNodeRequest(req.raw);
    const node = fastify ? (req.raw as IncomingMessage) : (req as IncomingMessage);
    restoreBodyHeaders(node);
    const { rawBody, body } = req as { rawBody?: unknown; body?: unknown };
    const result = await receiveNode(
      r,
      node,
      nodeRawBody(node, FIX, [rawBody, fastify ? textBytes(node, body) : undefined, body]),
    );
    const reply = await toNodeReply(result, node);
    if ('raw' in res && typeof res.send === 'function') sendFastify(res, reply);
    else writeNodeReply(res as ServerResponse, reply);
  };
}

/**
 * On the Fastify platform a `text/plain` body (AWS SNS sends one) arrives as the text Fastify
 * decoded: its own text parser keeps no bytes, and Nest's `rawBody` covers JSON and forms only.
 * Valid UTF-8 encodes back to exactly the bytes sent; bytes that were not valid UTF-8 come back
 * changed, and then fail verification, never pass it.
 */
function textBytes(req: IncomingMessage, body: unknown): Uint8Array | undefined {
  if (typeof body !== 'string') return undefined;
  const type = req.headers['content-type'];
  if (typeof type !== 'string' || !/^\s*text\/plain\s*(;|$)/i.test(type)) return undefined;
  return new TextEncoder().encode(body);
}

function isNodeRequest(value: unknown): value is IncomingMessage {
  return typeof value === 'object' && value !== null && typeof (value as IncomingMessage).on === 'function';
}

function sendFastify(res: Exclude<NestResponse, ServerResponse>, { status, headers, body }: NodeReply): void {
  res.code(status);
  for (const [name, value] of Object.entries(headers)) res.header(name, value);
  // Bytes, not text: Fastify runs a string through any serializer the app set for the reply.
  res.send(nodeBytes(body));
}

/** `OnceonlyModule.register` options: the receiver's options (or a receiver) and the route's path (POST and GET). */
export type OnceonlyModuleOptions<P extends Provider<any, any> = Provider<any, any>> = ReceiverInput<P> & {
  /**
   * The `POST` route, from the app's root (a global prefix applies).
   * @example 'webhooks/stripe'
   */
  path: string;
};

export interface OnceonlyModuleAsyncOptions<P extends Provider<any, any> = Provider<any, any>> {
  /** The `POST` route, from the app's root (a global prefix applies). @example 'webhooks/stripe' */
  path: string;
  /** Modules whose providers `useFactory` injects. */
  imports?: DynamicModule['imports'];
  /** What `useFactory` receives, in order: provider tokens (classes, strings, symbols). */
  inject?: FactoryProvider['inject'];
  /** Builds the receiver's options (or a receiver) from the injected services. */
  useFactory: (...deps: any[]) => ReceiverInput<P> | Promise<ReceiverInput<P>>;
}

let registrations = 0;

/**
 * A Nest module that adds one webhook route. Register it once per provider; the handler may use
 * your services through `registerAsync`.
 *
 * @example
 * @Module({
 *   imports: [
 *     OnceonlyModule.register({ path: 'webhooks/github', provider: github({ secret }), store, handler }),
 *     OnceonlyModule.registerAsync({
 *       path: 'webhooks/stripe',
 *       imports: [BillingModule],
 *       inject: [BillingService],
 *       useFactory: (billing: BillingService) => ({
 *         provider: stripe({ secret: process.env.STRIPE_WEBHOOK_SECRET! }),
 *         store,
 *         on: { 'invoice.paid': ({ event }) => billing.markPaid(event.data.object.id) },
 *       }),
 *     }),
 *   ],
 * })
 * export class AppModule {}
 * // main.ts: await NestFactory.create(AppModule, { rawBody: true })
 */
// biome-ignore lint/complexity/noStaticOnlyClass: a Nest dynamic module is a class with static factories.
export class OnceonlyModule {
  /** One webhook route from options known up front. */
  static register<P extends Provider<any, any>>(options: OnceonlyModuleOptions<P>): DynamicModule {
    const { path, ...input } = options as OnceonlyModuleOptions<P> & Record<string, unknown>;
    const receiver = toReceiver(input as ReceiverInput<P>);
    const token = `onceonly:receiver:${++registrations}:${path}`;
    return {
      module: OnceonlyModule,
      controllers: [webhookController(path, token)],
      providers: [{ provide: token, useValue: receiver }, ownBodyProvider(path, token)],
    };
  }

  /** One webhook route whose options are built from injected services. */
  static registerAsync<P extends Provider<any, any>>(options: OnceonlyModuleAsyncOptions<P>): DynamicModule {
    const token = `onceonly:receiver:${++registrations}:${options.path}`;
    return {
      module: OnceonlyModule,
      imports: options.imports ?? [],
      controllers: [webhookController(options.path, token)],
      providers: [
        {
          provide: token,
          useFactory: async (...deps: unknown[]) => toReceiver(await options.useFactory(...deps)),
          inject: options.inject ?? [],
        },
        ownBodyProvider(options.path, token),
      ],
    };
  }
}
Module({})(OnceonlyModule);

/**
 * The module's route reads its own body, up to the receiver's `maxBodyBytes`, whatever the app's
 * global body parser allows: on the Express platform Nest's JSON and urlencoded parsers (100 kB by
 * default) would otherwise answer a larger delivery with their own 413, before the route, with no
 * outcome, no `onOutcome`, and a provider that never retries. Created with the module, before Nest
 * registers its parsers, a middleware sets aside a POST's body headers (Content-Length,
 * Transfer-Encoding) for the route: body-parser sees no body and passes, the route puts them back,
 * and the bytes stay in the stream for the core's bounded read. On the
 * Fastify platform, Fastify's own `bodyLimit` (1 MiB by default) bounds what its parser reads.
 */
function ownBodyProvider(path: string, token: string): FactoryProvider {
  const route = `/${path.replace(/^\/+|\/+$/g, '')}`;
  return {
    provide: `${token}:own-body`,
    inject: [HttpAdapterHost],
    useFactory: (host: HttpAdapterHost) => {
      const adapter = host.httpAdapter as
        | { getType?: () => string; getInstance?: () => ExpressRoutes & { use?: (fn: unknown) => unknown } }
        | undefined;
      if (adapter?.getType?.() !== 'express') return false;
      const app = adapter.getInstance?.();
      app?.use?.((req: IncomingMessage, _res: unknown, next: () => void) => {
        if (req.method === 'POST') {
          // The module's route: exactly, or a path ending the same way that Express routes to a
          // static path equal to it (the route under the global prefix, a RouterModule path, a URI
          // version). An app route that merely ends the same way (`POST /projects/:id/webhooks`)
          // keeps its body.
          const at = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '');
          if (at === route || (at.endsWith(route) && routedStatically(app, at))) {
            setBodyHeadersAside(req);
          }
        }
        next();
      });
      return true;
    },
  };
}

/** The part of an Express app (4 or 5) whose routes the module looks up. */
interface ExpressRoutes {
  readonly router?: { readonly stack?: unknown };
  readonly _router?: { readonly stack?: unknown };
}

/**
 * Whether Express would route a POST to `path` to a route registered with exactly that static
 * path (its first route matching it, as Express dispatches), not to one with parameters.
 */
function routedStatically(app: ExpressRoutes | undefined, path: string): boolean {
  const stack = (app?.router ?? app?._router)?.stack;
  if (!Array.isArray(stack)) return false;
  for (const layer of stack as {
    route?: { path?: unknown; methods?: Record<string, boolean> };
    match?: (path: string) => unknown;
  }[]) {
    const route = layer?.route;
    if (!route || !(route.methods?.post || route.methods?._all) || typeof layer.match !== 'function')
      continue;
    try {
      if (!layer.match(path)) continue;
    } catch {
      return false;
    }
    return typeof route.path === 'string' && route.path.replace(/\/+$/, '') === path;
  }
  return false;
}

const ASIDE = Symbol.for('onceonly.nestjs.bodyHeaders');
const BODY_HEADERS = ['content-length', 'transfer-encoding'] as const;

function setBodyHeadersAside(req: IncomingMessage): void {
  const aside: Record<string, string | undefined> = {};
  for (const name of BODY_HEADERS) {
    aside[name] = req.headers[name];
    delete req.headers[name];
  }
  (req as unknown as Record<symbol, unknown>)[ASIDE] = aside;
}

/** Puts back the body headers the module's middleware set aside from Nest's body parsers. */
function restoreBodyHeaders(req: IncomingMessage): void {
  const aside = (req as unknown as Record<symbol, Record<string, string | undefined> | undefined>)[ASIDE];
  if (!aside) return;
  for (const name of BODY_HEADERS) if (aside[name] !== undefined) req.headers[name] = aside[name];
  delete (req as unknown as Record<symbol, unknown>)[ASIDE];
}

/** A controller class with one `POST path` route over the receiver registered under `token`. */
function webhookController(path: string, token: string): new (receiver: Receiver) => unknown {
  // The decorators are applied as calls: no compiler flag is needed to build this file.
  class OnceonlyWebhookController {
    readonly #receive: (req: NestRequest, res: NestResponse) => Promise<void>;
    constructor(receiver: Receiver) {
      this.#receive = webhook(receiver);
    }
    handle(req: NestRequest, res: NestResponse): Promise<void> {
      return this.#receive(req, res);
    }
    /** A GET reaches the provider's handshake (Meta's hub.challenge); the core answers 405 otherwise. */
    handshake(req: NestRequest, res: NestResponse): Promise<void> {
      return this.#receive(req, res);
    }
  }
  Controller()(OnceonlyWebhookController);
  Inject(token)(OnceonlyWebhookController, undefined, 0);
  for (const [method, decorate] of [
    ['handle', Post(path)],
    ['handshake', Get(path)],
  ] as const) {
    const descriptor = Object.getOwnPropertyDescriptor(OnceonlyWebhookController.prototype, method)!;
    decorate(OnceonlyWebhookController.prototype, method, descriptor);
    Req()(OnceonlyWebhookController.prototype, method, 0);
    Res()(OnceonlyWebhookController.prototype, method, 1);
  }
  return OnceonlyWebhookController;
}
