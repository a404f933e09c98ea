/**
 * Building blocks every provider shares: secrets, header access, HMAC, constant-time matching of
 * several candidate signatures, timestamp tolerance in both directions, and strict JSON bodies.
 */
import { createHash, createHmac, createSecretKey, type KeyObject, timingSafeEqual } from 'node:crypto';
import { ConfigError, VerificationError } from '../errors.js';
import { type Duration, parseDuration } from '../lease/duration.js';
import type { HeaderReader } from './types.js';

/** One secret, or several during a rotation (any one may match). */
export type SecretInput = string | readonly string[];

/** The default timestamp tolerance, applied in both directions. */
export const DEFAULT_TOLERANCE_MS = 5 * 60_000;

/**
 * Normalises secrets to key bytes at construction. Surrounding whitespace (a trailing newline from
 * an env file) is trimmed. `decode` turns the dashboard form into key bytes and throws on a
 * malformed secret, so a bad secret is a configuration error, never a failed delivery.
 */
export function secretKeys(
  provider: string,
  secret: SecretInput | undefined,
  decode: (secret: string) => Uint8Array = (s) => Buffer.from(s, 'utf8'),
): KeyObject[] {
  const list = typeof secret === 'string' ? [secret] : Array.isArray(secret) ? secret : undefined;
  if (!list || list.length === 0) {
    throw new ConfigError(
      'invalid_secret',
      `onceonly: ${provider} needs a secret (a string, or an array of strings while rotating)`,
    );
  }
  return list.map((raw, i) => {
    if (typeof raw !== 'string' || raw.trim() === '') {
      throw new ConfigError(
        'invalid_secret',
        `onceonly: ${provider} secret #${i + 1} is empty; copy it from the provider's dashboard`,
      );
    }
    const bytes = decode(raw.trim());
    // A KeyObject is imported once here, rather than from raw bytes on every HMAC (a few % per delivery).
    return createSecretKey(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  });
}

/** A header's value, or `undefined` when missing or empty. */
export function header(headers: HeaderReader, name: string): string | undefined {
  const value = headers.get(name);
  return value === null || value === '' ? undefined : value;
}

/** A header's value; a `missing_header` rejection naming the header when absent. */
export function requireHeader(headers: HeaderReader, name: string): string {
  const value = header(headers, name);
  if (value === undefined)
    throw new VerificationError('missing_header', `onceonly: the ${name} header is missing`);
  return value;
}

/** Raw body bytes as a Buffer view (no copy). */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export type HmacAlgorithm = 'sha1' | 'sha256' | 'sha512';

/** HMAC over the concatenation of `parts`, without joining them into a new buffer first. */
export function hmac(
  algorithm: HmacAlgorithm,
  key: KeyObject | Uint8Array,
  parts: readonly (Uint8Array | string)[],
): Buffer {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

/**
 * Decodes standard base64 with optional padding, strictly: data characters from `A-Za-z0-9+/`, then
 * at most two `=`, where the data length fits the padding (none: 0, 2 or 3 past a multiple of 4; one
 * `=`: 3; two: 2). Buffer.from skips characters outside the alphabet, so a result shorter than the
 * length implies means one was there; it also reads the URL-safe `-` and `_`, refused first.
 * No character loop in JavaScript: this runs on every delivery.
 */
function decodeBase64(value: string): Buffer | undefined {
  let end = value.length;
  if (value.charCodeAt(end - 1) === 61) {
    end -= 1;
    if (end > 0 && value.charCodeAt(end - 1) === 61) end -= 1;
  }
  const padding = value.length - end;
  const tail = end % 4;
  if (padding === 0 ? tail === 1 : padding === 1 ? tail !== 3 : tail !== 2) return undefined;
  if (value.indexOf('-') !== -1 || value.indexOf('_') !== -1) return undefined;
  const bytes = Buffer.from(value, 'base64');
  return bytes.length === Math.floor((end * 3) / 4) ? bytes : undefined;
}

/** Decodes one signature; `undefined` when it is not valid in that encoding. */
export function decodeSignature(value: string, encoding: 'hex' | 'base64'): Buffer | undefined {
  if (value.length === 0 || value.length > 1024) return undefined;
  if (encoding === 'hex') {
    if (value.length % 2 !== 0) return undefined;
    // Buffer.from stops at the first pair that is not hex: a short result means a bad character.
    const bytes = Buffer.from(value, 'hex');
    return bytes.length * 2 === value.length ? bytes : undefined;
  }
  return decodeBase64(value);
}

/**
 * True when any expected signature equals any candidate, compared in constant time. Every pair is
 * compared (no early exit on the first match), so timing reveals neither which nor whether.
 */
export function anyMatch(expected: readonly Buffer[], candidates: readonly Buffer[]): boolean {
  let found = false;
  for (const e of expected) {
    for (const c of candidates) {
      if (e.length === c.length && timingSafeEqual(e, c)) found = true;
    }
  }
  return found;
}

/**
 * Throws `invalid_signature` unless the HMAC of `prefix` + `body` under one of the keys equals one
 * of the candidates. The hot path of the timestamped providers: no intermediate lists, and still
 * every pair compared in constant time.
 */
export function requireHmac(
  provider: string,
  algorithm: HmacAlgorithm,
  keys: readonly (KeyObject | Uint8Array)[],
  prefix: string,
  body: Uint8Array,
  candidates: readonly Buffer[],
): void {
  let found = false;
  for (let k = 0; k < keys.length; k++) {
    const expected = createHmac(algorithm, keys[k]!).update(prefix).update(body).digest();
    for (let c = 0; c < candidates.length; c++) {
      const candidate = candidates[c]!;
      if (candidate.length === expected.length && timingSafeEqual(expected, candidate)) found = true;
    }
  }
  if (!found) throw noMatch(provider);
}

function noMatch(provider: string): VerificationError {
  return new VerificationError(
    'invalid_signature',
    `onceonly: no ${provider} signature matched; check the secret and that the body reaches onceonly unparsed`,
  );
}

/** Throws `invalid_signature` unless one of the candidates matches. */
export function requireMatch(
  provider: string,
  expected: readonly Buffer[],
  candidates: readonly Buffer[],
): void {
  if (!anyMatch(expected, candidates)) throw noMatch(provider);
}

/** True for 1 to `max` ASCII digits (a character loop: this runs on every delivery). */
function isDigits(value: string, max: number): boolean {
  if (value.length === 0 || value.length > max) return false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** Parses an integer timestamp header (seconds or ms) into ms since the epoch. */
export function parseTimestamp(name: string, value: string, unit: 's' | 'ms' = 's'): number {
  if (!isDigits(value, 16)) {
    throw new VerificationError(
      'malformed_header',
      `onceonly: the ${name} header is not an integer timestamp`,
    );
  }
  return Number(value) * (unit === 's' ? 1000 : 1);
}

/** Rejects a timestamp outside ±`toleranceMs` of `receivedAt`, saying which side it fell off. */
export function checkTolerance(timestampMs: number, receivedAt: Date, toleranceMs: number): void {
  const skew = receivedAt.getTime() - timestampMs;
  // An invalid receivedAt would make every comparison false and wave any timestamp through.
  if (Number.isNaN(skew)) {
    throw new ConfigError(
      'invalid_option',
      'onceonly: receivedAt is not a valid Date; pass the time the delivery arrived (or leave it out for now)',
    );
  }
  if (skew > toleranceMs) {
    throw new VerificationError(
      'timestamp_too_old',
      `onceonly: the delivery's timestamp is ${Math.round(skew / 1000)} s old, over the ${toleranceMs / 1000} s tolerance (a replay, or a queued delivery: pass receivedAt)`,
    );
  }
  if (-skew > toleranceMs) {
    throw new VerificationError(
      'timestamp_too_new',
      `onceonly: the delivery's timestamp is ${Math.round(-skew / 1000)} s in the future, over the ${toleranceMs / 1000} s tolerance (check the server clock)`,
    );
  }
}

/** A tolerance option parsed once at construction. */
export function toleranceMs(value: Duration | undefined): number {
  return value === undefined ? DEFAULT_TOLERANCE_MS : parseDuration(value, 'tolerance');
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** Parses the body as a JSON object; `invalid_body` for invalid UTF-8, invalid JSON or a non-object. */
export function parseJsonObject(rawBody: Uint8Array): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(rawBody));
  } catch {
    throw new VerificationError('invalid_body', 'onceonly: the body is not valid UTF-8 JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new VerificationError('invalid_body', 'onceonly: the body must be a JSON object');
  }
  return value as Record<string, unknown>;
}

/** A string or number field of an object as a string; `undefined` otherwise. */
export function stringField(value: unknown, field: string): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const v = (value as Record<string, unknown>)[field];
  return typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined;
}

// ---------------------------------------------------------------------------------------------
// Helpers for the named providers (added with issue 3). Existing exports above keep their behaviour.
// ---------------------------------------------------------------------------------------------

/**
 * Maps a union of events discriminated by `type` to `{ [type]: event }`, so typed `on` handlers
 * narrow: `EventMapOfUnion<Stripe.Event>['invoice.paid']` is `Stripe.InvoicePaidEvent`.
 */
export type EventMapOfUnion<E extends { type: string }> = {
  [K in E['type']]: Extract<E, { type: K }>;
};

/** A retention option parsed once at construction, with the provider's default. */
export function retentionMs(value: Duration | undefined, fallback: Duration): number {
  return parseDuration(value ?? fallback, 'retention');
}

/**
 * Refuses secrets that look like another credential of the same provider (an API key pasted where
 * the webhook signing secret belongs): a configuration error naming what to copy instead.
 */
export function refuseLookalikes(
  provider: string,
  secret: string,
  lookalikes: readonly (readonly [prefix: string, what: string])[],
  expected: string,
): void {
  for (const [prefix, what] of lookalikes) {
    if (secret.startsWith(prefix)) {
      throw new ConfigError(
        'invalid_secret',
        `onceonly: the ${provider} secret starts with '${prefix}', which is ${what}; use ${expected}`,
      );
    }
  }
}

/**
 * A secret decoder for {@link secretKeys} that refuses the provider's other credentials (see
 * {@link refuseLookalikes}) and takes the secret's UTF-8 bytes as the key.
 */
export function refusingLookalikes(
  provider: string,
  lookalikes: readonly (readonly [prefix: string, what: string])[],
  expected: string,
): (secret: string) => Uint8Array {
  return (secret) => {
    refuseLookalikes(provider, secret, lookalikes, expected);
    return Buffer.from(secret, 'utf8');
  };
}

/** Decodes the body as UTF-8 text; `invalid_body` when it is not valid UTF-8. */
export function decodeUtf8(rawBody: Uint8Array): string {
  try {
    return utf8.decode(rawBody);
  } catch {
    throw new VerificationError('invalid_body', 'onceonly: the body is not valid UTF-8');
  }
}

/** Parses the body as any JSON value; `invalid_body` for invalid UTF-8 or invalid JSON. */
export function parseJson(rawBody: Uint8Array): unknown {
  const text = decodeUtf8(rawBody);
  try {
    return JSON.parse(text);
  } catch {
    throw new VerificationError('invalid_body', 'onceonly: the body is not valid JSON');
  }
}

/** Parses a JSON object from text (a form field holding JSON); `invalid_body` otherwise. */
export function parseJsonObjectText(text: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new VerificationError('invalid_body', `onceonly: ${what} is not valid JSON`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new VerificationError('invalid_body', `onceonly: ${what} must be a JSON object`);
  }
  return value as Record<string, unknown>;
}

/** True when the request says its body is `application/x-www-form-urlencoded`. */
export function isForm(headers: HeaderReader): boolean {
  const type = headers.get('content-type');
  return type?.toLowerCase().startsWith('application/x-www-form-urlencoded') === true;
}

/** Parses a form-encoded body (`a=1&b=2`, `+` as space); `invalid_body` for invalid UTF-8. */
export function parseForm(rawBody: Uint8Array): URLSearchParams {
  return new URLSearchParams(decodeUtf8(rawBody));
}

/** SHA-256 over the concatenation of `parts`, hex encoded. */
export function sha256Parts(parts: readonly (Uint8Array | string)[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest('hex');
}

/** HMAC of `parts` under every key (one per secret during a rotation). */
export function hmacEach(
  algorithm: HmacAlgorithm,
  keys: readonly (KeyObject | Uint8Array)[],
  parts: readonly (Uint8Array | string)[],
): Buffer[] {
  const out: Buffer[] = [];
  for (const key of keys) out.push(hmac(algorithm, key, parts));
  return out;
}

/**
 * Decodes each offered signature (after stripping `prefix`; values without it are ignored) and
 * throws `malformed_header` when none is valid in `encoding`.
 */
export function offeredSignatures(
  headerName: string,
  values: readonly string[],
  encoding: 'hex' | 'base64',
  prefix = '',
): Buffer[] {
  const out: Buffer[] = [];
  for (const raw of values) {
    const value = raw.trim();
    if (!value.startsWith(prefix)) continue;
    const decoded = decodeSignature(value.slice(prefix.length), encoding);
    if (decoded) out.push(decoded);
  }
  if (out.length === 0) {
    throw new VerificationError(
      'malformed_header',
      `onceonly: the ${headerName} header holds no ${encoding} signature${prefix ? ` prefixed '${prefix}'` : ''}`,
    );
  }
  return out;
}

/**
 * Splits a `k=v<sep>k=v` header (Stripe's `t=..,v1=..`, Paddle's `ts=..;h1=..`) into its pairs,
 * splitting each at its first `=` so base64 padding survives.
 */
export function keyValuePairs(value: string, separator: string): [string, string][] {
  const out: [string, string][] = [];
  for (const item of value.split(separator)) {
    const at = item.indexOf('=');
    if (at <= 0) continue;
    out.push([item.slice(0, at).trim(), item.slice(at + 1).trim()]);
  }
  return out;
}

/** Throws `missing_event_id` naming the field when a provider that always sends an id sent none. */
export function requireId(provider: string, id: string | undefined, field: string): string {
  if (id === undefined || id === '') {
    throw new VerificationError(
      'missing_event_id',
      `onceonly: the ${provider} event has no ${field}; it always sends one, so this delivery is refused`,
    );
  }
  return id;
}

/**
 * A digest of a parsed JSON object with the named per-attempt fields removed, for providers that
 * rewrite a field on every retry: two deliveries of one event give the same digest. The object was
 * parsed from signed bytes, so the digest is of signed material.
 */
export function digestWithout(event: Record<string, unknown>, fields: readonly string[]): string {
  const copy: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(event)) if (!fields.includes(k)) copy[k] = v;
  return sha256Parts([JSON.stringify(copy)]);
}
