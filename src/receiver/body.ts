import { type Later, later, type Tick, wheel } from '../core/timers.js';
import { BodyTimeoutError, BodyTooLargeError, OnceonlyError, VerificationError } from '../errors.js';
import type { HeaderReader } from '../providers/types.js';

/** Raw bodies accepted by `receive()`. A string is taken as UTF-8; prefer bytes. */
export type RawBody = Uint8Array | ArrayBuffer | string;

/**
 * A body still to be read: a Node `IncomingMessage` (or any async iterable of byte chunks) or a web
 * `ReadableStream`. `receive()` reads it with the same hard bound as `fetch()`.
 */
export type BodySource = AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>;

/** Header shapes accepted by `receive()`: web `Headers`, Node's `IncomingHttpHeaders`, or pairs. */
export type HeadersInput =
  | Headers
  | Record<string, string | readonly string[] | number | undefined>
  | Iterable<readonly [string, string]>;

const encoder = new TextEncoder();

export function toBytes(body: RawBody): Uint8Array {
  if (typeof body === 'string') return encoder.encode(body);
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  throw new TypeError('onceonly: rawBody must be a Uint8Array, Buffer, ArrayBuffer or string');
}

/** Normalises headers; a value `Headers` refuses (control characters) is a malformed header, not a crash. */
export function toHeaders(input: HeadersInput | undefined): Headers {
  if (input instanceof Headers) return input;
  const headers = new Headers();
  if (input === undefined || input === null) return headers;
  try {
    const pairs: Iterable<readonly [string, unknown]> =
      Symbol.iterator in input ? (input as Iterable<readonly [string, string]>) : Object.entries(input);
    for (const [name, value] of pairs) {
      // HTTP/2's pseudo-headers (`:method`, `:path`...), which Node's http2 compatibility API lists
      // among a request's headers, are not headers: left out, as is any other name with a colon
      // first (the inbox's own stamp among them).
      if (value === undefined || value === null || name.startsWith(':')) continue;
      if (Array.isArray(value)) for (const v of value) headers.append(name, String(v));
      else headers.append(name, String(value));
    }
  } catch (cause) {
    throw malformed(cause);
  }
  return headers;
}

/**
 * Headers for the pipeline: a web `Headers` as it is, and a plain object (Node's
 * `IncomingHttpHeaders`) behind a light case-insensitive view instead of a copy into `Headers`, which
 * costs more than verifying a signature. Values are checked as they are read, as `Headers` would.
 */
export function toHeaderReader(input: HeadersInput | undefined): HeaderReader {
  if (input instanceof Headers) return input;
  if (input !== undefined && input !== null && !(Symbol.iterator in input)) {
    return new ObjectHeaders(input as Record<string, string | readonly string[] | number | undefined>);
  }
  return toHeaders(input);
}

/** Headers the inbox keeps: every request header but cookies, as lower-case name/value pairs. */
export function headerPairs(reader: HeaderReader): [string, string][] {
  const out: [string, string][] = [];
  for (const [name, value] of asWebHeaders(reader)) {
    if (name === 'cookie' || name === 'set-cookie') continue;
    out.push([name, value]);
  }
  return out;
}

/** A web `Headers` for a reader from {@link toHeaderReader}. */
export function asWebHeaders(reader: HeaderReader): Headers {
  if (reader instanceof Headers) return reader;
  if (reader instanceof ObjectHeaders) return reader.toHeaders();
  throw new TypeError('onceonly: unknown header reader');
}

function malformed(cause?: unknown): VerificationError {
  return new VerificationError(
    'malformed_header',
    'onceonly: a request header has an invalid name or value',
    {
      cause,
    },
  );
}

// What `Headers` refuses in a value: NUL, CR and LF.
const FORBIDDEN_VALUE = /[\0\r\n]/;

class ObjectHeaders implements HeaderReader {
  /** Built only if a lookup misses and the object has names that are not lower case. */
  private folded: Map<string, unknown> | undefined;

  constructor(private readonly input: Record<string, string | readonly string[] | number | undefined>) {}

  get(name: string): string | null {
    const key = name.toLowerCase();
    // Node's IncomingHttpHeaders are lower case already: one property read.
    let raw: unknown = Object.hasOwn(this.input, key) ? this.input[key] : undefined;
    if (raw === undefined) raw = this.fold().get(key);
    if (raw === undefined || raw === null) return null;
    const value = Array.isArray(raw) ? raw.map((v) => String(v).trim()).join(', ') : String(raw).trim();
    if (FORBIDDEN_VALUE.test(value)) throw malformed();
    return value;
  }

  private fold(): Map<string, unknown> {
    if (this.folded) return this.folded;
    const folded = new Map<string, unknown>();
    for (const name of Object.keys(this.input)) {
      const lower = name.toLowerCase();
      if (lower === name) continue;
      const raw = this.input[name];
      const previous = folded.get(lower);
      folded.set(lower, previous === undefined ? raw : [previous, raw].flat());
    }
    this.folded = folded;
    return folded;
  }

  /** A web `Headers` copy, for handlers that ask for one. */
  toHeaders(): Headers {
    return toHeaders(this.input);
  }
}

/**
 * Reads a request body up to `limit` bytes. A declared Content-Length over the limit is refused
 * before reading anything; a body without one (chunked) is refused as soon as it passes the limit,
 * and the rest is never buffered.
 */
export async function readBody(request: Request, limit: number, timeoutMs?: number): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array(0);
  return readBounded(request.body, limit, request.headers.get('content-length'), timeoutMs);
}

/**
 * Reads a body source up to `limit` bytes (see {@link readBody}) and within `timeoutMs` for the whole
 * body. A web stream is cancelled at the limit or the deadline; a Node stream is only left unread
 * (not destroyed), so the server can still answer 413 or 408 on it.
 */
export async function readBounded(
  source: BodySource,
  limit: number,
  contentLength?: string | null,
  timeoutMs?: number,
): Promise<Uint8Array> {
  const web = typeof (source as ReadableStream).getReader === 'function';
  if (contentLength != null && /^\d+$/.test(contentLength) && Number(contentLength) > limit) {
    if (web) await (source as ReadableStream).cancel().catch(() => {});
    throw new BodyTooLargeError(limit);
  }
  if (!web && isFreshNodeStream(source)) return readNodeStream(source, limit, timeoutMs);
  // A web stream is read through its reader, which locks it: cancelling must then go through the
  // reader too (the stream's own cancel() rejects while it is locked, and would cancel nothing).
  let cancel: () => Promise<void> = () => Promise.resolve();
  let next: () => Promise<IteratorResult<Uint8Array>>;
  if (web) {
    const reader = (source as ReadableStream<Uint8Array>).getReader();
    next = () => reader.read() as Promise<IteratorResult<Uint8Array>>;
    cancel = () => reader.cancel();
  } else {
    const iterator = (source as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
    next = () => iterator.next();
  }
  // One deadline for the whole body, so a sender trickling a byte at a time cannot hold the request.
  let timer: Later | undefined;
  const expired =
    timeoutMs === undefined
      ? undefined
      : new Promise<never>((_, reject) => {
          timer = later(() => reject(new BodyTimeoutError(timeoutMs)), timeoutMs);
        });
  expired?.catch(() => {});
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await (expired ? Promise.race([next(), expired]) : next());
      if (done) break;
      const chunk = typeof value === 'string' ? encoder.encode(value) : value;
      size += chunk.byteLength;
      if (size > limit) throw new BodyTooLargeError(limit);
      chunks.push(chunk);
    }
  } catch (error) {
    // Not awaited past a moment: a source that never settles its cancel must not hold the answer.
    await Promise.race([cancel().catch(() => {}), new Promise((resolve) => setTimeout(resolve, 100))]);
    throw bodyFailure(error);
  } finally {
    timer?.cancel();
  }
  return joined(chunks, size);
}

/** The parts of a Node `Readable` (an `IncomingMessage`) that reading it by its events needs. */
interface NodeStream {
  on(event: string, listener: (...args: any[]) => void): unknown;
  off(event: string, listener: (...args: any[]) => void): unknown;
  pause(): unknown;
  readonly readableFlowing: boolean | null;
  readonly readableEnded: boolean;
  readonly destroyed: boolean;
}

/**
 * A Node stream nothing has started reading, ended or destroyed: its events give every byte. Any
 * other (a stream already flowing, an ended one, a generic async iterable) goes through its async
 * iterator, which knows how to finish those.
 */
function isFreshNodeStream(source: BodySource): source is BodySource & NodeStream {
  const s = source as Partial<NodeStream>;
  return (
    typeof s.on === 'function' &&
    typeof s.off === 'function' &&
    typeof s.pause === 'function' &&
    s.readableFlowing === null &&
    s.readableEnded === false &&
    s.destroyed === false
  );
}

/**
 * Reads a fresh Node stream by its `data` events (as Fastify's and Express's own body parsers do):
 * one promise and one deadline on the shared wheel per body, instead of an async iterator with a
 * race per chunk. Past the limit or the deadline it is paused and left unread, not destroyed, so
 * the server can still answer 413 or 408 on it; the stream reads ahead no further than its own
 * buffer. A stream closed before its end (the sender went away) fails as the async iterator would.
 */
function readNodeStream(stream: NodeStream, limit: number, timeoutMs?: number): Promise<Uint8Array> {
  return new Promise<Uint8Array>((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    let deadline: Tick | undefined;
    let settled = false;
    const finish = (error: unknown, bytes?: Uint8Array) => {
      if (settled) return;
      settled = true;
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      stream.off('close', onClose);
      if (deadline) wheel.cancel(deadline);
      if (bytes) return resolve(bytes);
      stream.pause();
      // Left unread: an error it emits later (the sender going away) must not end the process.
      stream.on('error', ignore);
      reject(error);
    };
    // Whatever a chunk is (an object-mode stream handed in by mistake), a throw here ends this body
    // with an outcome: it must never escape from a stream's event as an uncaught exception.
    const onData = (value: Uint8Array | string) => {
      try {
        const chunk = typeof value === 'string' ? encoder.encode(value) : value;
        if (!(chunk instanceof Uint8Array)) throw new TypeError('a body chunk is not bytes');
        size += chunk.byteLength;
        if (size > limit) finish(new BodyTooLargeError(limit));
        else chunks.push(chunk);
      } catch (error) {
        finish(error);
      }
    };
    const onEnd = () => {
      try {
        finish(undefined, joined(chunks, size));
      } catch (error) {
        finish(error);
      }
    };
    const onError = (error: unknown) => finish(bodyFailure(error));
    // A stream may emit 'close' right after its last push, before its (next-tick) 'end': only a
    // close that no 'end' follows is the sender going away.
    const onClose = () =>
      setTimeout(
        () =>
          finish(
            bodyFailure(Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' })),
          ),
        0,
      );
    if (timeoutMs !== undefined) {
      deadline = wheel.add(timeoutMs, () => finish(new BodyTimeoutError(timeoutMs)), true);
    }
    stream.on('end', onEnd);
    stream.on('error', onError);
    stream.on('close', onClose);
    stream.on('data', onData);
  });
}

function ignore(): void {}

/** Error codes and messages of a connection that went away mid-body (Node's streams, undici). */
const DROPPED_CODES = new Set([
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ERR_STREAM_PREMATURE_CLOSE',
  'UND_ERR_SOCKET',
  'ABORT_ERR',
]);
const DROPPED_MESSAGES = new Set(['aborted', 'terminated', 'Premature close', 'socket hang up']);

function dropped(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 2) return false;
  const { code, name, message, cause } = error as {
    code?: unknown;
    name?: unknown;
    message?: unknown;
    cause?: unknown;
  };
  return (
    (typeof code === 'string' && DROPPED_CODES.has(code)) ||
    name === 'AbortError' ||
    (typeof message === 'string' && DROPPED_MESSAGES.has(message)) ||
    dropped(cause, depth + 1)
  );
}

/**
 * What reading a body source threw, as the delivery's rejection: a connection that went away
 * mid-body as `body_aborted`, so a dropped connection is not counted as a malformed body; anything
 * else as it was (onceonly's own refusals, and a source that failed otherwise, such as a decoder
 * given bytes it cannot decode, which stays `invalid_body`).
 */
function bodyFailure(error: unknown): unknown {
  if (error instanceof OnceonlyError || !dropped(error)) return error;
  return new VerificationError(
    'body_aborted',
    'onceonly: the body ended early: the sender closed the connection before it was whole',
    { cause: error },
  );
}

/** The chunks as one byte array of `size` bytes (the one chunk itself when there is one). */
export function joined(chunks: Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
