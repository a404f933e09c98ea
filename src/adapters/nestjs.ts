/**
 * NestJS 10 and 11 on the Express platform: a controller helper for an app created with
 * `NestFactory.create(AppModule, { rawBody: true })`.
 *
 * Nest's own body parsers run before every controller. With `rawBody: true` they keep the exact
 * bytes on `req.rawBody`, and the helper verifies those; bodies Nest does not parse (other content
 * types, or `bodyParser: false`) are read from the request stream with the `maxBodyBytes` bound.
 * Without `rawBody: true` the bytes are gone, and the delivery fails with `body_already_parsed`
 * (500 through the core: outcome headers and `onOutcome`) naming that option instead of a confusing
 * signature mismatch.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Provider } from '../providers/types.js';
import {
  nodeRawBody,
  type ReceiverInput,
  receiveNode,
  toNodeReply,
  toReceiver,
  writeNodeReply,
} from '../receiver/node.js';

export { BodyAlreadyParsedError, type ReceiverInput } from '../receiver/node.js';

const FIX = 'create the app with NestFactory.create(AppModule, { rawBody: true })';

/**
 * A function for a Nest controller method that receives a webhook safely: verifies over the raw
 * bytes, dedups, runs your handler, and writes the outcome (or your handler's own `Response`) to the
 * response, so the method takes `@Res()`. Takes a receiver or the options to create one.
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
 * }
 */
export function webhook<P extends Provider<any, any>>(
  receiver: ReceiverInput<P>,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const r = toReceiver(receiver);
  return async (req, res) => {
    const { rawBody, body } = req as IncomingMessage & { rawBody?: unknown; body?: unknown };
    const raw = nodeRawBody(req, FIX, [rawBody, body]);
    const result = await receiveNode(r, req, raw);
    writeNodeReply(res, await toNodeReply(result, req));
  };
}
