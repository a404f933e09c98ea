import { BodyTooLargeError, VerificationError } from '../errors.js';

/** Raw bodies accepted by `receive()`. A string is taken as UTF-8; prefer bytes. */
export type RawBody = Uint8Array | ArrayBuffer | string;

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
      if (value === undefined || value === null) continue;
      if (Array.isArray(value)) for (const v of value) headers.append(name, String(v));
      else headers.append(name, String(value));
    }
  } catch (cause) {
    throw new VerificationError(
      'malformed_header',
      'onceonly: a request header has an invalid name or value',
      { cause },
    );
  }
  return headers;
}

/**
 * Reads a request body up to `limit` bytes. A declared Content-Length over the limit is refused
 * before reading anything; a body without one (chunked) is refused as soon as it passes the limit,
 * and the rest is never buffered.
 */
export async function readBody(request: Request, limit: number): Promise<Uint8Array> {
  const declared = request.headers.get('content-length');
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > limit) {
    await request.body?.cancel().catch(() => {});
    throw new BodyTooLargeError(limit);
  }
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw new BodyTooLargeError(limit);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
