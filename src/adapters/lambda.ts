/**
 * AWS Lambda behind API Gateway (REST, v1; HTTP API, payload 2.0), a Function URL or an Application
 * Load Balancer: `export const handler = webhook(receiver)`. The event carries the whole body
 * already (as text, or base64 when `isBase64Encoded`): the adapter turns it back into the exact
 * bytes sent, the headers into what Node would have made of them, the event's domain and path into
 * the URL the provider called (Square and Twilio sign it), and the core's answer into the result
 * shape of the event's source. The handler's deadline is cut to the invocation's remaining time.
 * The Lambda types are written here, as far as the adapter reads them: no `@types/aws-lambda`.
 */
import {
  answerOf,
  BodyTooLargeError,
  type DeliveryResult,
  type Duration,
  oneLine,
  parseDuration,
  VerificationError,
} from '../receiver/adapter-kit.js';
import { type Provider, type ReceiverInput, toReceiver } from './web-io.js';

export type { ReceiverInput } from './web-io.js';

type Values<V> = Readonly<Record<string, V | undefined>> | null | undefined;

/** An API Gateway REST API (or HTTP API payload 1.0) proxy event, as far as the adapter reads it. */
export interface ApiGatewayV1Event {
  readonly httpMethod: string;
  readonly path?: string | null | undefined;
  readonly headers?: Values<string>;
  readonly multiValueHeaders?: Values<readonly string[]>;
  readonly queryStringParameters?: Values<string>;
  readonly multiValueQueryStringParameters?: Values<readonly string[]>;
  readonly requestContext?: {
    readonly domainName?: string | undefined;
    /** The path as the client called it: with the stage (`/prod/webhooks`) on the execute-api domain. */
    readonly path?: string | undefined;
    readonly elb?: undefined;
  } | null;
  readonly body?: string | null | undefined;
  readonly isBase64Encoded?: boolean | undefined;
}

/** An API Gateway HTTP API event (payload 2.0) or a Lambda Function URL event. */
export interface ApiGatewayV2Event {
  readonly version: '2.0' | (string & {});
  readonly rawPath: string;
  readonly rawQueryString?: string | undefined;
  /** The request's cookies, taken out of the `cookie` header. */
  readonly cookies?: readonly string[] | undefined;
  /** Header names in lower case; repeated headers joined with commas. */
  readonly headers?: Values<string>;
  readonly requestContext: {
    readonly domainName?: string | undefined;
    readonly http: { readonly method: string };
  };
  readonly body?: string | null | undefined;
  readonly isBase64Encoded?: boolean | undefined;
}

/** An Application Load Balancer target event (with or without multi-value headers on the target group). */
export interface AlbEvent {
  readonly requestContext: { readonly elb: { readonly targetGroupArn?: string | undefined } };
  readonly httpMethod: string;
  readonly path: string;
  /** As the client sent them: the load balancer does not decode them. */
  readonly queryStringParameters?: Values<string>;
  readonly multiValueQueryStringParameters?: Values<readonly string[]>;
  readonly headers?: Values<string>;
  readonly multiValueHeaders?: Values<readonly string[]>;
  readonly body?: string | null | undefined;
  readonly isBase64Encoded?: boolean | undefined;
}

/** Every HTTP event the handler takes. */
export type LambdaHttpEvent = ApiGatewayV1Event | ApiGatewayV2Event | AlbEvent;

/** The Lambda context, as far as the adapter uses it. */
export interface LambdaContext {
  /** Milliseconds left before Lambda stops the invocation. */
  getRemainingTimeInMillis(): number;
  callbackWaitsForEmptyEventLoop: boolean;
}

/** What the handler returns, in the shape of the event's source. */
export interface LambdaHttpResult {
  statusCode: number;
  /** ALB only: `200 OK`. */
  statusDescription?: string;
  headers?: Record<string, string>;
  /** v1 and ALB, when the request came with multi-value headers. */
  multiValueHeaders?: Record<string, string[]>;
  /** v2 (HTTP API, Function URL): one entry per `Set-Cookie`. */
  cookies?: string[];
  body: string;
  isBase64Encoded: boolean;
}

export interface LambdaWebhookOptions {
  /**
   * The time kept back from the invocation's remaining time (`context.getRemainingTimeInMillis()`):
   * the handler's deadline is the shorter of the receiver's `timeout` and the remaining time less
   * this, so a handler that overruns is aborted and its claim released (and the answer returned)
   * before Lambda stops the invocation. It covers the claim before the handler and the release
   * after it.
   * @default '1s'
   * @example webhook(options, { margin: '2s' })
   */
  margin?: Duration;
}

type Kind = 'v1' | 'v2' | 'alb';

/**
 * A Lambda handler that receives a webhook safely: verifies over the exact bytes sent, dedups, runs
 * your handler within the invocation's remaining time, and answers with the outcome (or your
 * handler's own `Response`) in the result shape API Gateway, the Function URL or the ALB expects.
 * Takes a receiver or the options to create one; create it outside the handler, once per container.
 *
 * @example
 * export const handler = webhook({ provider: stripe({ secret }), store: redisStore({ client }), handler: ... });
 */
export function webhook<P extends Provider<any, any>>(
  receiver: ReceiverInput<P>,
  options: LambdaWebhookOptions = {},
): (event: LambdaHttpEvent, context?: LambdaContext) => Promise<LambdaHttpResult> {
  const r = toReceiver(receiver);
  const marginMs = parseDuration(options.margin ?? '1s', 'lambda webhook margin');
  return async (event, context) => {
    if (context !== null && typeof context === 'object') {
      // The answer is returned only once the claim is confirmed or released (the core awaits both),
      // so nothing of the delivery is left in the event loop to wait for; what is left there (a
      // store client's sockets and timers, a confirm retried in the background after a store
      // error, which never lands after its lease) must not hold the invocation open until its
      // timeout. A frozen container keeps no claim: its lease runs out and the retry takes over.
      // A context that will not take it (frozen, a getter only) is left as it is.
      try {
        context.callbackWaitsForEmptyEventLoop = false;
      } catch {}
    }
    const kind = kindOf(event);
    // A malformed event (a body or header of the wrong type, a body that is no base64) is refused
    // through the core's outcome path, as a body that fails to arrive: a 400 with a stable code that
    // reaches neither the store nor the handler.
    let rawBody: Uint8Array | AsyncIterable<Uint8Array>;
    let headers: Record<string, string>;
    try {
      headers = headersOf(event, kind);
      rawBody = bodyOf(event, r.maxBodyBytes);
    } catch (error) {
      headers = Object.create(null);
      rawBody = refusing(error);
    }
    const result = await r.receive({
      rawBody,
      headers,
      url: urlOf(event, kind),
      method:
        kind === 'v2'
          ? (event as ApiGatewayV2Event).requestContext.http.method
          : (event as ApiGatewayV1Event | AlbEvent).httpMethod,
      timeout: deadlineOf(context, marginMs),
    });
    return resultOf(result, kind, hasMultiValueHeaders(event, kind));
  };
}

function kindOf(event: LambdaHttpEvent): Kind {
  if (event === null || typeof event !== 'object') throw notHttp(event);
  const e = event as Partial<ApiGatewayV2Event & AlbEvent>;
  if (typeof e.requestContext?.http?.method === 'string' && typeof e.rawPath === 'string') return 'v2';
  if (e.requestContext?.elb) return 'alb';
  if (typeof e.httpMethod === 'string') return 'v1';
  throw notHttp(event);
}

function notHttp(event: unknown): TypeError {
  // At most a few key names, each cut short and escaped: the event may be anyone's.
  const keys =
    event !== null && typeof event === 'object'
      ? Object.keys(event)
          .slice(0, 8)
          .map((key) => oneLine(key.length > 40 ? `${key.slice(0, 40)}...` : key))
          .join(', ')
      : '';
  return new TypeError(
    `onceonly: the Lambda webhook handler takes API Gateway (REST or HTTP API), Function URL or ALB events; got ${
      Array.isArray(event) ? 'an array' : typeof event
    }${keys ? ` with ${keys}` : ''}`,
  );
}

/**
 * The handler's deadline: the remaining time less the margin (at least 1 ms), if Lambda says it.
 * A context without a working `getRemainingTimeInMillis` leaves the receiver's own `timeout`.
 */
function deadlineOf(context: LambdaContext | undefined, marginMs: number): number | undefined {
  let remaining: unknown;
  try {
    const read = (context as Partial<LambdaContext> | null | undefined)?.getRemainingTimeInMillis;
    remaining = typeof read === 'function' ? read.call(context) : undefined;
  } catch {
    return undefined;
  }
  if (typeof remaining !== 'number' || !Number.isFinite(remaining)) return undefined;
  return Math.max(1, Math.floor(remaining - marginMs));
}

const encoder = new TextEncoder();

/**
 * The exact bytes sent: a base64 body decoded, a text body as its UTF-8 (what API Gateway and the
 * ALB decoded it from). One over `maxBodyBytes` is refused (413) before it is decoded or encoded:
 * a base64 body by the size it decodes to, a text one by its length, which its UTF-8 can only pass.
 * A body that is not text, an `isBase64Encoded` that is not a boolean, or a base64 body with other
 * characters than base64's throws `invalid_body`: no AWS service sends one, and guessing would
 * verify other bytes than were sent.
 */
function bodyOf(event: LambdaHttpEvent, limit: number): Uint8Array | AsyncIterable<Uint8Array> {
  const body: unknown = event.body ?? '';
  const encoded: unknown = event.isBase64Encoded ?? false;
  if (typeof body !== 'string') {
    throw invalidBody(`the event's body is ${Array.isArray(body) ? 'an array' : typeof body}, not text`);
  }
  if (typeof encoded !== 'boolean') {
    throw invalidBody(`the event's isBase64Encoded is ${typeof encoded}, not a boolean`);
  }
  if (encoded) {
    if (base64Size(body) > limit) return refusing(new BodyTooLargeError(limit));
    if (!BASE64.test(body)) throw invalidBody('the event says its body is base64, and it is not');
    const bytes = Buffer.from(body, 'base64');
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  if (body.length > limit) return refusing(new BodyTooLargeError(limit));
  return encoder.encode(body);
}

/** Base64 (standard or URL-safe alphabet), line breaks allowed, padding only at the end. */
const BASE64 = /^[A-Za-z0-9+/_\-\s]*(?:=\s*){0,2}$/;

const invalidBody = (why: string) => new VerificationError('invalid_body', `onceonly: ${why}`);
const malformedHeader = (why: string) => new VerificationError('malformed_header', `onceonly: ${why}`);

/** The number of bytes a base64 text decodes to (padding and line breaks left out). */
function base64Size(text: string): number {
  let length = text.length;
  while (length > 0 && text.charCodeAt(length - 1) === 61 /* = */) length--;
  // Line breaks are not data (a body API Gateway encoded has none; counted exactly when present).
  if (/\s/.test(text)) length = text.slice(0, length).replace(/\s+/g, '').length;
  return Math.floor((length * 3) / 4);
}

/** A body source that refuses at once with `error`: the core answers through its outcome path. */
function refusing(error: unknown): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(error) }),
  };
}

/**
 * Headers Node keeps once when a request repeats them (the first wins), as `IncomingMessage` does:
 * what the Node adapters hand the core.
 */
const SINGLE = new Set([
  'age',
  'authorization',
  'content-length',
  'content-type',
  'etag',
  'expires',
  'from',
  'host',
  'if-modified-since',
  'if-unmodified-since',
  'last-modified',
  'location',
  'max-forwards',
  'proxy-authorization',
  'referer',
  'retry-after',
  'server',
  'user-agent',
]);

/** Adds one header value as Node's `IncomingMessage` would: names in lower case, repeats joined. */
function add(out: Record<string, string>, name: string, value: string): void {
  const lower = name.toLowerCase();
  const previous = out[lower];
  if (previous === undefined) out[lower] = value;
  else if (SINGLE.has(lower)) return;
  else out[lower] = `${previous}${lower === 'cookie' ? '; ' : ', '}${value}`;
}

/**
 * The request headers, joined the way Node joins them; a v2 event's cookies back in `cookie`.
 * Headers or cookies of another shape than AWS gives (a value that is not text, a list that is
 * not one) throw `malformed_header`; a null value is left out.
 */
function headersOf(event: LambdaHttpEvent, kind: Kind): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  const multi = kind === 'v2' ? undefined : (event as ApiGatewayV1Event | AlbEvent).multiValueHeaders;
  if (multi !== undefined && multi !== null) {
    for (const [name, values] of entries(multi, 'multiValueHeaders')) {
      if (values === undefined || values === null) continue;
      if (!Array.isArray(values))
        throw malformedHeader(`the event's multi-value header ${shown(name)} is no list`);
      for (const value of values) add(out, name, text(value, name));
    }
  } else {
    for (const [name, value] of entries(event.headers, 'headers')) {
      if (value !== undefined && value !== null) add(out, name, text(value, name));
    }
  }
  if (kind === 'v2') {
    const cookies: unknown = (event as ApiGatewayV2Event).cookies;
    if (cookies !== undefined && cookies !== null && !Array.isArray(cookies))
      throw malformedHeader("the event's cookies are no list");
    for (const cookie of (cookies as unknown[] | null | undefined) ?? [])
      add(out, 'cookie', text(cookie, 'cookie'));
  }
  return out;
}

/** The entries of an event's header object; one that is not an object throws `malformed_header`. */
function entries(value: unknown, field: string): [string, unknown][] {
  if (value === undefined || value === null) return [];
  if (typeof value !== 'object' || Array.isArray(value))
    throw malformedHeader(`the event's ${field} are no object`);
  return Object.entries(value);
}

function text(value: unknown, name: string): string {
  if (typeof value === 'string') return value;
  throw malformedHeader(`the event's header ${shown(name)} has a value that is ${typeof value}, not text`);
}

/** A header name for a message: cut short and escaped. */
const shown = (name: string) => JSON.stringify(oneLine(name.length > 40 ? `${name.slice(0, 40)}...` : name));

/** The request was given with multi-value headers: the answer goes back in that shape (v1, ALB). */
function hasMultiValueHeaders(event: LambdaHttpEvent, kind: Kind): boolean {
  if (kind === 'v2') return false;
  const multi = (event as ApiGatewayV1Event | AlbEvent).multiValueHeaders;
  return multi !== null && typeof multi === 'object';
}

/**
 * The URL the provider called. API Gateway and Function URLs answer on HTTPS only, at the event's
 * domain: v2 gives the path and query string as sent (`rawPath`, `rawQueryString`); v1 the path as
 * called (`requestContext.path`, with the stage on the execute-api domain) and the query decoded, so
 * it is encoded again. The ALB gives no domain: the `Host` header and `X-Forwarded-Proto` it sets,
 * and the query as sent.
 */
function urlOf(event: LambdaHttpEvent, kind: Kind): string {
  const header = (name: string): string | undefined => {
    const multi = kind === 'v2' ? undefined : (event as ApiGatewayV1Event | AlbEvent).multiValueHeaders;
    for (const source of [multi, event.headers]) {
      if (source === null || typeof source !== 'object') continue;
      for (const [key, value] of Object.entries(source)) {
        if (key.toLowerCase() !== name) continue;
        const first: unknown = Array.isArray(value) ? value[0] : value;
        if (typeof first === 'string') return first;
      }
    }
    return undefined;
  };
  if (kind === 'v2') {
    const e = event as ApiGatewayV2Event;
    const host = textOr(e.requestContext.domainName) ?? header('host') ?? 'localhost';
    const search = textOr(e.rawQueryString);
    return `https://${host}${textOr(e.rawPath) || '/'}${search ? `?${search}` : ''}`;
  }
  if (kind === 'v1') {
    const e = event as ApiGatewayV1Event;
    const host = textOr(e.requestContext?.domainName) ?? header('host') ?? 'localhost';
    const path = textOr(e.requestContext?.path) ?? textOr(e.path) ?? '/';
    return `https://${host}${path}${query(e, encodeText)}`;
  }
  const e = event as AlbEvent;
  const proto = header('x-forwarded-proto')?.split(',')[0]?.trim() || 'https';
  return `${proto}://${header('host') ?? 'localhost'}${textOr(e.path) || '/'}${query(e, (part) => part)}`;
}

const textOr = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

// A lone UTF-16 surrogate, which encodeURIComponent refuses (URIError).
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** A decoded query part encoded again; a lone surrogate (no sender's) as U+FFFD, never a throw. */
const encodeText = (part: string) => encodeURIComponent(part.replace(LONE, '\ufffd'));

/** The query string from an event's parameters (text only), each name and value through `encode`. */
function query(event: ApiGatewayV1Event | AlbEvent, encode: (part: string) => string): string {
  const pairs: string[] = [];
  const multi: unknown = event.multiValueQueryStringParameters;
  const single: unknown = event.queryStringParameters;
  const add = (name: string, value: unknown) => {
    if (typeof value === 'string') pairs.push(`${encode(name)}=${encode(value)}`);
  };
  if (multi !== null && typeof multi === 'object') {
    for (const [name, values] of Object.entries(multi)) {
      for (const value of Array.isArray(values) ? values : [values]) add(name, value);
    }
  } else if (single !== null && typeof single === 'object') {
    for (const [name, value] of Object.entries(single)) add(name, value);
  }
  return pairs.length > 0 ? `?${pairs.join('&')}` : '';
}

/** The reason phrases of the statuses an answer may carry (the ALB's `statusDescription`). */
const REASONS: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No Content',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The core's answer (outcome headers and JSON, or the handler's own `Response` read whole, as every
 * adapter sends it) in the result shape of the event's source. A body that is UTF-8 goes as text,
 * any other as base64. No `Connection` header: API Gateway and the ALB own the connection.
 */
async function resultOf(result: DeliveryResult, kind: Kind, multi: boolean): Promise<LambdaHttpResult> {
  const response = await answerOf(result);
  const headers: Record<string, string> = {};
  for (const [name, value] of response.headers) {
    if (name !== 'set-cookie' && name !== 'connection') headers[name] = value;
  }
  const cookies = response.headers.getSetCookie();
  const bytes = new Uint8Array(await response.arrayBuffer());
  let body: string;
  let isBase64Encoded = false;
  try {
    body = utf8.decode(bytes);
  } catch {
    body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
    isBase64Encoded = true;
  }
  const statusCode = response.status;
  if (kind === 'v2') {
    return { statusCode, headers, ...(cookies.length > 0 ? { cookies } : {}), body, isBase64Encoded };
  }
  const out: LambdaHttpResult = { statusCode, body, isBase64Encoded };
  if (kind === 'alb') {
    const reason = response.statusText || REASONS[statusCode];
    out.statusDescription = reason ? `${statusCode} ${reason}` : String(statusCode);
  }
  if (multi) {
    const values: Record<string, string[]> = {};
    for (const [name, value] of Object.entries(headers)) values[name] = [value];
    if (cookies.length > 0) values['set-cookie'] = cookies;
    out.multiValueHeaders = values;
  } else {
    // Single-value headers carry one Set-Cookie: enable multi-value headers for more.
    out.headers = cookies.length > 0 ? { ...headers, 'set-cookie': cookies[0]! } : headers;
  }
  return out;
}
