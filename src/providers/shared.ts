/**
 * Building blocks every provider shares: secrets, header access, HMAC, constant-time matching of
 * several candidate signatures, and strict JSON bodies; timestamps and their tolerance are in
 * `families/timestamps.ts`, re-exported here.
 */
import { createHash, createHmac, createSecretKey, type KeyObject, timingSafeEqual } from 'node:crypto';
import { type Duration, parseDuration } from '../core/duration.js';
import { ConfigError, VerificationError } from '../errors.js';
import type { HeaderReader } from './types.js';

export {
  checkTolerance,
  DEFAULT_TOLERANCE_MS,
  parseIsoTimestamp,
  parseTimestamp,
  toleranceMs,
} from './families/timestamps.js';

/** One secret, or several during a rotation (any one may match). */
export type SecretInput = string | readonly string[];

/**
 * Normalises secrets to key bytes at construction. Surrounding whitespace (a trailing newline from
 * an env file) is trimmed. `decode` turns the dashboard form into key bytes and throws on a
 * malformed secret, so a bad secret is a configuration error, never a failed delivery.
 * @internal
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

/** The fixed label whose HMAC under an endpoint's first secret is that endpoint's identity. */
const IDENTITY_LABEL = 'onceonly endpoint identity';

/**
 * A provider's `identity`, computed once at construction from its first key (the first secret
 * while rotating): HMAC-SHA256 of a fixed label under a secret key, or SHA-256 of a public key's
 * DER (SubjectPublicKeyInfo), hex, first 16 characters. The same key gives the same identity in
 * every process; a keyed hash, truncated, reveals nothing of a secret (not even its plain hash).
 * @internal
 */
export function endpointIdentity(keys: readonly KeyObject[]): string {
  const key = keys[0];
  if (key === undefined) throw new ConfigError('invalid_secret', 'onceonly: a provider needs a key');
  const digest =
    key.type === 'secret'
      ? createHmac('sha256', key).update(IDENTITY_LABEL).digest('hex')
      : createHash('sha256')
          .update(key.export({ type: 'spki', format: 'der' }))
          .digest('hex');
  return digest.slice(0, 16);
}

/**
 * The `identity` of an endpoint whose keys are the sender's, the same for every endpoint (AWS SNS,
 * PayPal, Plaid): a digest of what names the endpoint instead (its topic, webhook id, client id),
 * which is no secret. SHA-256 of the label, the provider and the value, hex, first 16 characters.
 */
export function namedIdentity(provider: string, value: string): string {
  return createHash('sha256').update(`${IDENTITY_LABEL}\0${provider}\0${value}`).digest('hex').slice(0, 16);
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

/** Raw body bytes as a Buffer view (no copy). @internal */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

export type HmacAlgorithm = 'sha1' | 'sha256' | 'sha512';

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

/** Decodes one signature; `undefined` when it is not valid in that encoding. @internal */
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

/** The value of a base64 (or base64url) alphabet character; -1 for anything else. */
function base64Value(c: number): number {
  if (c >= 65 && c <= 90) return c - 65; // A-Z
  if (c >= 97 && c <= 122) return c - 71; // a-z
  if (c >= 48 && c <= 57) return c + 4; // 0-9
  if (c === 43 || c === 45) return 62; // + or -
  if (c === 47 || c === 95) return 63; // / or _
  return -1;
}

/**
 * True when the unused low bits of the last data character are zero, as every encoder writes them.
 * Base64 of a length that is not a multiple of 3 leaves 2 or 4 bits over; decoders drop them, so
 * without this check `...A=` and `...B=` decode to the same bytes and a changed signature would
 * still verify (RFC 4648 §3.5: a decoder may refuse non-zero pad bits; the families do).
 */
function canonicalTail(value: string, end: number): boolean {
  const tail = end % 4;
  if (tail === 0) return true;
  const last = base64Value(value.charCodeAt(end - 1));
  return tail === 2 ? (last & 15) === 0 : tail === 3 ? (last & 3) === 0 : false;
}

/**
 * Decodes one signature strictly, for the scheme families: as {@link decodeSignature}, and base64
 * only in its canonical form (padded, zero pad bits), so one signature has exactly one spelling
 * besides the case of hex digits (which are one digit either way). Secrets and keys from a
 * dashboard are read leniently (`decodeSignature`); what travels with a delivery is not. `'base64url'` is RFC 4648 §5 without
 * padding, as JWS writes it; `+`, `/` and `=` are refused.
 * @internal
 */
export function decodeStrict(value: string, encoding: 'hex' | 'base64' | 'base64url'): Buffer | undefined {
  if (encoding === 'hex') return decodeSignature(value, 'hex');
  if (encoding === 'base64') {
    if (value.length === 0 || value.length > 1024) return undefined;
    let end = value.length;
    if (value.charCodeAt(end - 1) === 61) {
      end -= 1;
      if (end > 0 && value.charCodeAt(end - 1) === 61) end -= 1;
    }
    const padding = value.length - end;
    const tail = end % 4;
    // Padded as encoders write it: `=` exactly where the data stops short of a multiple of 4.
    if (padding === 0 ? tail !== 0 : padding === 1 ? tail !== 3 : tail !== 2) return undefined;
    if (!canonicalTail(value, end)) return undefined;
    if (value.indexOf('-') !== -1 || value.indexOf('_') !== -1) return undefined;
    const bytes = Buffer.from(value, 'base64');
    return bytes.length === Math.floor((end * 3) / 4) ? bytes : undefined;
  }
  if (value.length === 0 || value.length > 16_384 || value.length % 4 === 1) return undefined;
  if (value.indexOf('+') !== -1 || value.indexOf('/') !== -1 || value.indexOf('=') !== -1) return undefined;
  const bytes = Buffer.from(value, 'base64url');
  // Buffer.from skips characters outside the alphabet: a short result means one was there.
  if (bytes.length !== Math.floor((value.length * 3) / 4)) return undefined;
  return canonicalTail(value, value.length) ? bytes : undefined;
}

/**
 * True when any expected signature equals any candidate, compared in constant time. Every pair is
 * compared (no early exit on the first match), so timing reveals neither which nor whether.
 * @internal
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

function noMatch(provider: string): VerificationError {
  return new VerificationError(
    'invalid_signature',
    `onceonly: no ${provider} signature matched; check the secret and that the body reaches onceonly unparsed`,
  );
}

/**
 * The index of the first group holding an expected signature equal to a candidate, for schemes that
 * must know which signed string matched (Twilio's URL variants); throws `invalid_signature` when
 * none does. Every pair is compared in constant time, with no early exit.
 * @internal
 */
export function requireMatchIndex(
  provider: string,
  groups: readonly (readonly Buffer[])[],
  candidates: readonly Buffer[],
): number {
  let index = -1;
  for (let g = groups.length - 1; g >= 0; g--) if (anyMatch(groups[g] ?? [], candidates)) index = g;
  if (index === -1) throw noMatch(provider);
  return index;
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

/**
 * The event map of a sender whose published union names each event in the field `F` (`type` for
 * Mux and Notion, `RecordType` for Postmark): `{ [name]: member }`, so typed `on` handlers narrow.
 * A type whose field is a plain `string` (the provider's default shape) maps any name to `E`, and so
 * does a union with a member that lacks the field.
 *
 * @example
 * // EventMapByField<Models.BounceWebhook | Models.DeliveryWebhook, 'RecordType'>['Bounce'] is Models.BounceWebhook
 */
export type EventMapByField<E, F extends string> = [E] extends [{ readonly [P in F]: string }]
  ? string extends FieldOf<E, F>
    ? Record<string, E>
    : { [N in FieldOf<E, F>]: Extract<E, { readonly [P in F]: N }> }
  : Record<string, E>;

/** The values of a union's string field `F`, enum members as their string values. */
type FieldOf<E, F extends string> = E extends { readonly [P in F]: infer V extends string } ? `${V}` : never;

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
