/**
 * What every provider declaration shares, whatever its scheme family: the name and default
 * retention, how the credential is read (and which of the sender's other credentials are refused),
 * where the event's id and type live and whether the signature covers the type, and an optional
 * verification handshake. A family module (`bodyHmac`, `timestampedHmac`, `standardWebhooks`,
 * `urlFormHmac`, `asymmetric`, `token`) adds how its signature is read and checked, and turns the
 * whole declaration into a factory `(options) => provider`.
 */
import type { KeyObject } from 'node:crypto';
import type { Duration } from '../../core/duration.js';
import { ConfigError, VerificationError } from '../../errors.js';
import {
  asBuffer,
  digestWithout,
  endpointIdentity,
  header,
  parseForm,
  parseJsonObject,
  parseJsonObjectText,
  refuseLookalikes,
  requireHeader,
  retentionMs,
  type SecretInput,
  secretKeys,
} from '../shared.js';
import type {
  AuthenticatingProvider,
  DeliveryInput,
  HandshakeAnswer,
  HandshakeRequest,
  HeaderReader,
  Verified,
} from '../types.js';

/** A field of the signed body: `'id'`, or a path into nested objects: `['meta', 'event_name']`. */
export type FieldPath = string | readonly string[];

/** Other credentials of a sender, by prefix, that must never be taken for its signing secret. */
export type Lookalikes = readonly (readonly [prefix: string, what: string])[];

/** How a provider's secret is read from the form its dashboard shows. */
export interface SecretSpec {
  /**
   * The sender's other credentials (API keys, tokens) by prefix: pasting one instead of the
   * signing secret is a `ConfigError` naming what was pasted and what to copy.
   * @example [['sk_', 'a secret API key']]
   */
  readonly lookalikes?: Lookalikes | undefined;
  /** What to copy instead, for that message. @example "the endpoint's signing secret (whsec_...)" */
  readonly expected?: string | undefined;
  /** A further check of the trimmed secret: return a message (after `onceonly: `) to refuse it. */
  readonly refuse?: ((secret: string) => string | undefined) | undefined;
  /** Turns the trimmed secret into key bytes; throws `ConfigError` when malformed. @default its UTF-8 bytes */
  readonly decode?: ((secret: string) => Uint8Array) | undefined;
}

/**
 * Where the event's id and type live, for the common case: fields of the signed JSON body or
 * headers. A provider whose rules do not fit (Slack's forms, Discord's interaction types, SendGrid's
 * batches) gives `describe` instead.
 */
export interface EventSpec {
  /**
   * How the signed body is read: `'json'` a JSON object; `'json-or-form-payload'` a JSON object, or
   * a form whose `payload` field holds one (GitHub's form-encoded deliveries).
   * @default 'json'
   */
  readonly body?: 'json' | 'json-or-form-payload' | undefined;
  /**
   * The event id: a field of the signed body (dedup keys on it; a delivery without it is
   * `missing_event_id` unless `idRequired` is false), or a header. A header the signature does not
   * cover (`signed: false`) is reported as `id` only: a replayer could mint a fresh one, so dedup
   * keys on a digest of the signed body. Several headers are tried in order (the first present wins).
   */
  readonly id?:
    | FieldPath
    | { readonly header: string | readonly string[]; readonly signed: boolean }
    | undefined;
  /** For an id field: refuse a delivery without it (`missing_event_id`). @default true */
  readonly idRequired?: boolean | undefined;
  /**
   * The event type, used for `on` routing: a field of the signed body, or a header.
   */
  readonly type?: FieldPath | { readonly header: string | readonly string[] } | undefined;
  /**
   * Whether the signature covers the type's source. Say `false` for a header outside the signature
   * (GitHub's `X-GitHub-Event`): the receiver then binds the type into the fingerprint.
   */
  readonly typeSigned: boolean;
  /**
   * Body fields the sender rewrites on every attempt (Intercom's `delivery_attempts`), left out of
   * the content fingerprint so a retry is a duplicate, not a conflict.
   */
  readonly perAttempt?: readonly string[] | undefined;
}

/** What every family's declaration has. */
export interface BaseDeclaration<E, A> {
  /** Short stable name: the first segment of every dedup key. @example 'stripe' */
  readonly name: string;
  /** The name used in messages and for secrets, when it differs from `name`. @default name */
  readonly label?: string | undefined;
  /** The default retention: the sender's retry window plus a margin. @example '4d' */
  readonly retention: Duration;
  /** Where the event id and type live (or `describe`). */
  readonly event?: EventSpec | undefined;
  /**
   * For rules an `event` spec cannot say: reads the verified delivery. `auth` is what the family's
   * check returned (the parsed body where the family had to parse it, the signed id...).
   */
  readonly describe?: ((input: DeliveryInput, auth: A) => Verified<E>) | undefined;
  /** A verification handshake the sender performs (see {@link HandshakeSpec}). */
  readonly handshake?: HandshakeSpec<A> | undefined;
}

/**
 * A provider's verification handshake, declared with its family: called for every request before
 * the method check and before verification; returns the answer, or `undefined` when the request is
 * not a handshake. `tools.authenticate` is the family's own signature check (sync or async): call
 * it first wherever the sender signs its handshake. `tools.keys` are the configured secrets.
 *
 * @example
 * // Slack: a signed POST { type: 'url_verification', challenge } answered with the challenge.
 * handshake: async (request, { authenticate }) => {
 *   if (request.method !== 'POST' || !bodyIncludes(request.rawBody, 'url_verification')) return undefined;
 *   await authenticate(request);
 *   const event = parseJsonObject(request.rawBody);
 *   return event.type === 'url_verification' ? { body: { challenge: event.challenge } } : undefined;
 * }
 */
export type HandshakeSpec<A> = (
  request: HandshakeRequest,
  tools: HandshakeTools<A>,
) => HandshakeAnswer | undefined | Promise<HandshakeAnswer | undefined>;

export interface HandshakeTools<A> {
  /** The family's signature check over the request, as `authenticate` runs it on a delivery. */
  readonly authenticate: (input: DeliveryInput) => A | Promise<A>;
  /** The configured secret keys (HMAC families), first the current one. @internal */
  readonly keys: readonly KeyObject[];
  /**
   * The options the provider was made with, for a handshake that needs its own (Meta's
   * `verifyToken`, Asana's `onHookSecret`).
   */
  readonly options: Readonly<Record<string, unknown>>;
}

/** Reads secrets per the declaration: trimmed, look-alikes refused, decoded. @internal */
export function readSecrets(
  label: string,
  input: SecretInput | undefined,
  spec: SecretSpec = {},
): KeyObject[] {
  const { lookalikes, expected, refuse, decode } = spec;
  return secretKeys(label, input, (secret) => {
    if (lookalikes) refuseLookalikes(label, secret, lookalikes, expected ?? 'the signing secret');
    const why = refuse?.(secret);
    if (why !== undefined) throw new ConfigError('invalid_secret', `onceonly: ${why}`);
    return decode ? decode(secret) : Buffer.from(secret, 'utf8');
  });
}

const NAME = /^[a-z0-9][a-z0-9_.-]*$/i;

/** Refuses a name that cannot start a dedup key. */
export function checkName(name: unknown, what: string, example: string): string {
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: ${what} must be a short identifier like '${example}', got ${JSON.stringify(name)}`,
    );
  }
  return name;
}

/** A string or number field at `path` of a parsed body; `undefined` when absent or of another kind. */
export function fieldAt(value: unknown, path: FieldPath): string | undefined {
  let at: unknown = value;
  if (typeof path === 'string') {
    if (at === null || typeof at !== 'object') return undefined;
    at = (at as Record<string, unknown>)[path];
  } else {
    for (const step of path) {
      if (at === null || typeof at !== 'object') return undefined;
      at = (at as Record<string, unknown>)[step];
    }
  }
  return typeof at === 'string' && at !== '' ? at : typeof at === 'number' ? String(at) : undefined;
}

function pathName(path: FieldPath): string {
  return typeof path === 'string' ? path : path.join('.');
}

/**
 * Compiles an {@link EventSpec} into the function that reads a verified delivery: parse the body
 * (or take the one the family already parsed), read id and type, say what dedup keys on.
 */
export function describeEvent<E>(
  label: string,
  spec: EventSpec,
): (input: DeliveryInput, parsed?: Record<string, unknown>) => Verified<E> {
  const read =
    spec.body === 'json-or-form-payload'
      ? // The format follows the signed bytes, never the unsigned Content-Type: a captured JSON
        // delivery resent as a form must not be read as one (a `&payload=` in a comment would
        // then become the event). A form body is exactly `payload=<the JSON, encoded>`.
        (body: Buffer) =>
          startsWithPayloadField(body)
            ? parseJsonObjectText(parseForm(body).get('payload') ?? '', 'the payload form field')
            : parseJsonObject(body)
      : (body: Buffer) => parseJsonObject(body);
  const { id, type, typeSigned, perAttempt } = spec;
  const idRequired = spec.idRequired ?? true;
  const idHeader = id !== undefined && typeof id === 'object' && 'header' in id ? id : undefined;
  const idField = id !== undefined && idHeader === undefined ? (id as FieldPath) : undefined;
  const typeHeader =
    type !== undefined && typeof type === 'object' && 'header' in type ? type.header : undefined;
  const typeField = type !== undefined && typeHeader === undefined ? (type as FieldPath) : undefined;

  return (input, parsed) => {
    const { headers } = input;
    const event = parsed ?? read(asBuffer(input.rawBody));
    const eventType =
      typeField !== undefined
        ? fieldAt(event, typeField)
        : typeHeader !== undefined
          ? firstHeader(headers, typeHeader)
          : undefined;
    let id: string | undefined;
    let signedId = false;
    if (idField !== undefined) {
      id = fieldAt(event, idField);
      if (id !== undefined) signedId = true;
      else if (idRequired) {
        throw new VerificationError(
          'missing_event_id',
          `onceonly: the ${label} event has no ${pathName(idField)}; it always sends one, so this delivery is refused`,
        );
      }
    } else if (idHeader !== undefined) {
      const names = idHeader.header;
      id = firstHeader(headers, names);
      if (idHeader.signed) {
        if (id === undefined) requireHeader(headers, typeof names === 'string' ? names : (names[0] ?? ''));
        signedId = true;
      }
      // Unsigned: reported, never keyed on; the digest of the signed body is the key.
    }
    const e = event as E;
    // Object literals of one shape per case: this runs on every delivery.
    if (perAttempt === undefined) {
      return signedId
        ? { event: e, type: eventType, typeSigned, id, dedup: 'id' }
        : { event: e, type: eventType, typeSigned, id, dedup: 'body' };
    }
    // A content digest without the per-attempt fields: the fingerprint, and the key where no
    // signed id is (of signed material but not of the raw bytes, so it travels as the key).
    const digest = digestWithout(event, perAttempt);
    return signedId
      ? { event: e, type: eventType, typeSigned, id, dedup: 'id', fingerprint: digest }
      : {
          event: e,
          type: eventType,
          typeSigned,
          id,
          dedup: 'id',
          key: `body:${digest}`,
          fingerprint: digest,
        };
  };
}

/** The read step of a declaration: its `describe`, or its compiled `event` spec. */
export function describer<E, A>(
  d: BaseDeclaration<E, A>,
  parsedOf: (auth: A) => Record<string, unknown> | undefined = () => undefined,
): (input: DeliveryInput, auth: A) => Verified<E> {
  if (d.describe) return d.describe;
  const compiled = describeEvent<E>(d.label ?? d.name, d.event ?? { typeSigned: false });
  return (input, auth) => compiled(input, parsedOf(auth));
}

function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | undefined)?.then === 'function';
}

/** The parts a family hands over to make the provider object. @internal */
export interface Assembly<E, A> {
  readonly name: string;
  readonly retention: Duration | undefined;
  readonly defaultRetention: Duration;
  /** The keys whose first names the endpoint (see `identity`), the identity itself, or none. */
  readonly identity: readonly KeyObject[] | string | undefined;
  readonly authenticate: (input: DeliveryInput) => A | Promise<A>;
  readonly describe: (input: DeliveryInput, auth: A) => Verified<E>;
  readonly handshake?: HandshakeSpec<A> | undefined;
  readonly keys?: readonly KeyObject[] | undefined;
  /** The provider's options, handed to the handshake. */
  readonly options?: object | undefined;
}

/**
 * The provider object every family returns: `authenticate` is the family's check, `verify` that
 * check followed by the declaration's read step (one code path), `handshake` the declaration's.
 * Synchronous families stay synchronous (no promise per delivery); a family whose check may wait
 * (keys fetched from the sender) returns promises from both.
 * @internal
 */
export function assemble<E, A>(a: Assembly<E, A>): AuthenticatingProvider<E> {
  const { authenticate, describe, handshake } = a;
  const provider: AuthenticatingProvider<E> = {
    name: a.name,
    retentionMs: retentionMs(a.retention, a.defaultRetention),
    identity:
      a.identity === undefined || typeof a.identity === 'string' ? a.identity : endpointIdentity(a.identity),
    authenticate(input: DeliveryInput): void | Promise<void> {
      const result = authenticate(input);
      if (isPromise(result)) return result.then(() => undefined);
    },
    verify(input: DeliveryInput): Verified<E> | Promise<Verified<E>> {
      const result = authenticate(input);
      return isPromise(result) ? result.then((auth) => describe(input, auth)) : describe(input, result);
    },
  };
  if (handshake) {
    const tools: HandshakeTools<A> = {
      authenticate,
      keys: a.keys ?? [],
      options: (a.options ?? {}) as Readonly<Record<string, unknown>>,
    };
    (provider as { handshake?: AuthenticatingProvider<E>['handshake'] }).handshake = (request) =>
      handshake(request, tools);
  }
  return provider;
}

/** True when `needle` occurs in the body's bytes: the cheap first look of a handshake. */
export function bodyIncludes(body: Uint8Array, needle: string): boolean {
  return asBuffer(body).includes(needle);
}

const PAYLOAD_FIELD = Buffer.from('payload=');

function startsWithPayloadField(body: Buffer): boolean {
  return body.length >= PAYLOAD_FIELD.length && body.subarray(0, PAYLOAD_FIELD.length).equals(PAYLOAD_FIELD);
}

/** The first of `names` the delivery carries (several: the sender's older and newer header names). */
function firstHeader(headers: HeaderReader, names: string | readonly string[]): string | undefined {
  if (typeof names === 'string') return header(headers, names);
  for (const name of names) {
    const value = header(headers, name);
    if (value !== undefined) return value;
  }
  return undefined;
}
