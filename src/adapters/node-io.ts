/**
 * Shared by the adapters that sit on Node's `http` request and response: find the exact raw
 * bytes (or the unread stream), refuse clearly when another body parser got there first, and write
 * a delivery result to a Node response. What needs no Node types (the receiver from its options,
 * `unreadable`, `closeIfRefused`) is web-io.ts's, handed on from here.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  answerOf,
  type DeliveryResult,
  outcomeBody,
  outcomeHeaders,
  type Receiver,
} from '../receiver/adapter-kit.js';
import { unreadable } from './web-io.js';

export {
  BodyAlreadyParsedError,
  closeIfRefused,
  OnceonlyError,
  type Provider,
  type ReceiverInput,
  toReceiver,
  unreadable,
} from './web-io.js';

/** True when something already started reading (or finished reading) the request stream. */
export function streamConsumed(req: IncomingMessage): boolean {
  const stream = req as IncomingMessage & { _body?: unknown; readableDidRead?: boolean };
  // `_body` is body-parser's (Express, Nest) "I parsed this" flag; the rest is the stream's own state.
  return stream._body === true || stream.readableDidRead === true || stream.readableEnded === true;
}

/**
 * What `receive()` should read for a Node request: the raw bytes another layer kept (Express
 * `express.raw()`'s Buffer body, a `rawBody` Buffer as set by Nest `rawBody: true` or a
 * `verify` callback), else the untouched request stream, else (the stream was consumed and no raw
 * bytes were kept) a source that ends the delivery as `body_already_parsed` naming `fix`.
 */
export function nodeRawBody(
  req: IncomingMessage,
  fix: string,
  kept?: readonly unknown[],
): Uint8Array | IncomingMessage | AsyncIterable<Uint8Array> {
  for (const candidate of kept ?? []) if (candidate instanceof Uint8Array) return candidate;
  if (streamConsumed(req)) {
    // A body declared empty has nothing to lose (an Asana handshake POST, read by Nest on Fastify).
    return req.headers['content-length'] === '0' ? new Uint8Array(0) : unreadable(fix);
  }
  return req;
}

/**
 * The full URL of a Node request, for providers that sign it (Twilio, Square). The path is the one
 * the request arrived with: `originalUrl` where a framework rewrote `url` for a mounted app or
 * router (Express, Nest on Express), or the `originalUrl` given (Koa's, under koa-mount).
 */
export function nodeUrl(req: IncomingMessage, originalUrl?: string): string {
  const forwarded = req.headers['x-forwarded-proto'];
  const proto = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim();
  const encrypted = (req.socket as { encrypted?: boolean } | undefined)?.encrypted === true;
  const host = req.headers.host ?? 'localhost';
  const kept = originalUrl ?? (req as { originalUrl?: unknown }).originalUrl;
  const path = typeof kept === 'string' && kept.startsWith('/') ? kept : (req.url ?? '/');
  return `${proto || (encrypted ? 'https' : 'http')}://${host}${path}`;
}

/** A result as plain status, headers and body bytes: what Node-based frameworks write. */
export interface NodeReply {
  readonly status: number;
  /** Header name to value; `set-cookie` may hold several. */
  readonly headers: Record<string, string | string[]>;
  /**
   * The outcome JSON as text, or the handler's own response as bytes. Text goes out with its
   * headers in one socket write (Node joins a string body to the header block; bytes go as a
   * second chunk of a writev).
   */
  readonly body: Uint8Array | string;
}

/**
 * Flattens a result (the handler's own `Response` or the outcome JSON) into status, headers and
 * bytes, with the outcome headers set exactly as `toResponse` sets them. Synchronous for the
 * outcome JSON (every answer but a handler's own `Response`), so that answer costs no promise.
 */
export function toNodeReply(result: DeliveryResult, req?: IncomingMessage): NodeReply | Promise<NodeReply> {
  // The outcome JSON straight to text: a web Response read back costs more than the rest of a
  // duplicate's answer. The handler's own Response goes through the web path.
  if (result.response) return handlerReply(result, req);
  return closedIfUnread(outcomeReply(result), req);
}

/**
 * The handler's own `Response` as a reply: read whole by `answerOf` (at most 1 MiB, in the
 * handler's time), or the outcome's own reply when it cannot be. Never rejects.
 */
async function handlerReply(result: DeliveryResult, req: IncomingMessage | undefined): Promise<NodeReply> {
  return closedIfUnread(await responseToReply(await answerOf(result)), req);
}

function closedIfUnread(reply: NodeReply, req: IncomingMessage | undefined): NodeReply {
  // A GET or HEAD (a handshake, or a refused method) has no body to leave unread.
  if (req && !req.readableEnded && req.method !== 'GET' && req.method !== 'HEAD') {
    // The body was left unread (413): close the connection rather than let the client reuse a socket
    // whose request body it may still be sending.
    return { ...reply, headers: { ...reply.headers, connection: 'close' } };
  }
  return reply;
}

/**
 * Replies that depend on nothing but the outcome, status and `Retry-After` (no code, no degraded
 * reason, a first attempt): nearly every answer (processed, duplicate, in flight). Built once each
 * and frozen, headers too: every adapter only reads a reply (a copy is made where one is changed,
 * as `closedIfUnread` does). Bounded (a `Retry-After` is any number).
 */
const plainReplies = new Map<string, NodeReply>();
const PLAIN_REPLIES_MAX = 256;

/** The reply `toResponse` would make for a result without a handler response, built directly. */
function outcomeReply(result: DeliveryResult): NodeReply {
  if (
    result.code === undefined &&
    result.degraded === undefined &&
    result.outcome !== 'rejected' &&
    result.outcome !== 'too-large' &&
    (result.attempt === undefined || result.attempt <= 1)
  ) {
    const id = `${result.outcome}|${result.status}|${result.retryAfter}`;
    let plain = plainReplies.get(id);
    if (plain === undefined) {
      const built = builtReply(result);
      plain = Object.freeze({ ...built, headers: Object.freeze(built.headers) });
      if (plainReplies.size < PLAIN_REPLIES_MAX) plainReplies.set(id, plain);
    }
    return plain;
  }
  return builtReply(result);
}

function builtReply(result: DeliveryResult): NodeReply {
  const headers: Record<string, string> = {};
  const given = outcomeHeaders(result);
  for (const name in given) headers[name.toLowerCase()] = given[name]!;
  if (result.outcome === 'too-large' || result.code === 'body_timeout') headers.connection = 'close';
  headers['content-type'] = 'application/json';
  headers['cache-control'] = 'no-store';
  return { status: result.status, headers, body: JSON.stringify(outcomeBody(result)) };
}

/** Flattens a web `Response` into status, headers and bytes. */
export async function responseToReply(response: Response): Promise<NodeReply> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of response.headers) if (name !== 'set-cookie') headers[name] = value;
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) headers['set-cookie'] = cookies;
  const body = new Uint8Array(await response.arrayBuffer());
  return { status: response.status, headers, body };
}

/** The body's length in bytes, as Content-Length counts it. */
export function byteLength(body: Uint8Array | string): number {
  return typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
}

/** A reply body as bytes (a Buffer over the same memory, or the text's UTF-8). */
export function nodeBytes(body: Uint8Array | string): Buffer {
  return typeof body === 'string'
    ? Buffer.from(body)
    : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

/** A reply body as Koa takes it: the text as is, bytes as a Buffer over the same memory. */
export function nodeBody(body: Uint8Array | string): string | Buffer {
  return typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

/** Writes a reply to a Node response (Express, Nest on Express, bare `node:http`). */
export function writeNodeReply(res: ServerResponse, reply: NodeReply): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.statusCode = reply.status;
  for (const [name, value] of Object.entries(reply.headers)) res.setHeader(name, value);
  res.setHeader('content-length', byteLength(reply.body));
  res.end(reply.body);
}

/**
 * Writes a result's reply to a Node response: at once for the outcome JSON (no promise, no await:
 * one microtask less per answer), once read for the handler's own `Response`.
 */
export function writeResult(
  res: ServerResponse,
  result: DeliveryResult,
  req: IncomingMessage,
): void | Promise<void> {
  const reply = toNodeReply(result, req);
  if (reply instanceof Promise) return reply.then((read) => writeNodeReply(res, read));
  writeNodeReply(res, reply);
}

/**
 * Receives one Node request whose body source was resolved by {@link nodeRawBody}, with its method
 * and full URL (query string included): a GET reaches the provider's handshake, and anything the
 * provider does not answer is refused by the core (405, `Allow: POST`) without reading a body.
 */
export function receiveNode(
  receiver: Receiver,
  req: IncomingMessage,
  rawBody: Uint8Array | IncomingMessage | AsyncIterable<Uint8Array>,
  originalUrl?: string,
): Promise<DeliveryResult> {
  return receiver.receive({
    rawBody,
    headers: req.headers,
    url: nodeUrl(req, originalUrl),
    method: req.method ?? 'POST',
  });
}
