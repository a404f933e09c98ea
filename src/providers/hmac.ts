import type { Duration } from '../core/duration.js';
import { ConfigError, VerificationError } from '../errors.js';
import { bodyHmac, checkAlgorithm, type SignedContentInput } from './families/bodyHmac.js';
import { checkName } from './families/define.js';
import { timestampedHmac } from './families/timestampedHmac.js';
import { asBuffer, type HmacAlgorithm, header, parseJsonObject, type SecretInput } from './shared.js';
import type {
  AuthenticatingProvider,
  DeliveryInput,
  HandshakeAnswer,
  HandshakeRequest,
  HeaderReader,
  Verified,
} from './types.js';

export type { SignedContentInput } from './families/bodyHmac.js';

export interface HmacOptions<E = Record<string, unknown>> {
  /** The provider's name: the first segment of every dedup key. @example 'acme' */
  name: string;
  /** The signing secret as UTF-8 text; an array while rotating (any one may match). */
  secret: SecretInput;
  /** @default 'sha256' */
  algorithm?: HmacAlgorithm;
  /** How the signature is encoded in the header. @default 'hex' */
  encoding?: 'hex' | 'base64';
  /** The header carrying the signature. @example 'x-acme-signature' */
  signatureHeader: string;
  /** A prefix before each signature, such as `'sha256='` or `'v1='`; values without it are ignored. @default '' */
  signaturePrefix?: string;
  /** Separates several signatures in one header (any one may match), such as `','` or `' '`. */
  signatureSeparator?: string;
  /** A header with the signing time; when set it is required and checked against `tolerance`. */
  timestampHeader?: string;
  /** @default 's' */
  timestampUnit?: 's' | 'ms';
  /** How far the timestamp may be from the receive time, in both directions. @default '5m' */
  tolerance?: Duration;
  /**
   * What is signed, as pieces fed to the HMAC in order.
   * @default the body alone; with a timestamp header, `timestamp + '.' + body`
   * @example ({ timestamp, body }) => ['v0:', timestamp!, ':', body]
   */
  signedContent?: (input: SignedContentInput) => readonly (Uint8Array | string)[];
  /** Reads the event id from the parsed body (which is signed): dedup keys on it. */
  id?: (event: E, headers: HeaderReader) => string | undefined;
  /** A header carrying the event id. */
  idHeader?: string;
  /**
   * Whether `idHeader` is covered by the signature (only when `signedContent` includes it). When it
   * is not, dedup keys on a digest of the body, since a replayer could mint a fresh id header.
   * @default false
   */
  idSigned?: boolean;
  /** Reads the event type from the body. */
  type?: (event: E, headers: HeaderReader) => string | undefined;
  /** A header carrying the event type, used when `type` is not given. */
  typeHeader?: string;
  /**
   * Whether the signature covers the event type: `type` reads it from the signed body only, or
   * `typeHeader` names a header that `signedContent` includes. onceonly cannot tell from a callback,
   * so it assumes not; the receiver then binds the type into the fingerprint and remembers even the
   * deliveries it ignores, so a signed body seen under one type never runs a handler under another.
   * With `typeHeader` it needs a `signedContent` (the default signs only the timestamp and body).
   * @default false
   */
  typeSigned?: boolean;
  /** Require a JSON object body and parse it; `false` passes the raw bytes as the event. @default true */
  json?: boolean;
  /** How long completed keys are remembered by default. @default '3d' */
  retention?: Duration;
  /**
   * Answers the sender's verification handshake, consulted before verification for every request
   * (GET included): return the answer, or `undefined` when the request is not a handshake. Call
   * `authenticate` first wherever the sender signs its handshake. See docs/providers.md.
   * @default undefined (no handshake)
   * @example
   * // A challenge GET: ?challenge=<c>&token=<t>, answered with <c> when <t> is yours.
   * handshake: ({ method, url }) => {
   *   const q = new URL(url!).searchParams;
   *   return method === 'GET' && q.get('token') === process.env.ACME_VERIFY_TOKEN
   *     ? { body: q.get('challenge') ?? '' }
   *     : undefined;
   * }
   */
  handshake?: (
    request: HandshakeRequest,
    tools: { authenticate(input: DeliveryInput): unknown },
  ) => HandshakeAnswer | undefined | Promise<HandshakeAnswer | undefined>;
}

/**
 * A provider for any HMAC-signed webhook: header names, algorithm, encoding, prefix, what is
 * signed, an optional timestamp with tolerance, and where the event id and type come from. The
 * public face of the body-HMAC family (and, with `timestampHeader`, of the timestamped one).
 *
 * @example
 * const acme = hmac({
 *   name: 'acme',
 *   secret: process.env.ACME_SECRET!,
 *   signatureHeader: 'x-acme-signature',
 *   signaturePrefix: 'sha256=',
 *   timestampHeader: 'x-acme-timestamp',
 *   id: (event) => String(event.id),
 *   type: (event) => String(event.type),
 * });
 */
export function hmac<E = Record<string, unknown>>(options: HmacOptions<E>): AuthenticatingProvider<E> {
  const name = checkName(options.name, 'hmac name', 'acme');
  if (typeof options.signatureHeader !== 'string' || options.signatureHeader === '') {
    throw new ConfigError('invalid_option', `onceonly: hmac provider '${name}' needs signatureHeader`);
  }
  const algorithm = checkAlgorithm(options.algorithm ?? 'sha256', 'hmac');
  const typeSigned = options.typeSigned ?? false;
  if (typeSigned && !options.type && options.typeHeader && !options.signedContent) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: hmac provider '${name}' says typeSigned, but the default signed content (timestamp and body) does not cover ${options.typeHeader}; add it to signedContent`,
    );
  }
  const json = options.json ?? true;

  function describe(input: DeliveryInput): Verified<E> {
    const { headers } = input;
    const body = asBuffer(input.rawBody);
    const event = (json ? parseJsonObject(body) : body) as E;
    const type = options.type
      ? options.type(event, headers)
      : options.typeHeader
        ? header(headers, options.typeHeader)
        : undefined;
    if (options.id) {
      const id = options.id(event, headers);
      if (id === undefined || id === '') {
        throw new VerificationError('missing_event_id', `onceonly: the ${name} event has no id`);
      }
      return { event, type, typeSigned, id, dedup: 'id' };
    }
    const headerId = options.idHeader ? header(headers, options.idHeader) : undefined;
    if (options.idHeader && options.idSigned) {
      if (headerId === undefined)
        throw new VerificationError('missing_header', `onceonly: the ${options.idHeader} header is missing`);
      return { event, type, typeSigned, id: headerId, dedup: 'id' };
    }
    // No signed id: key on the digest of the signed body, so a replay with a fresh id is a duplicate.
    return { event, type, typeSigned, id: headerId, dedup: 'body' };
  }

  const signature = {
    header: options.signatureHeader,
    encoding: options.encoding ?? 'hex',
    prefix: options.signaturePrefix,
    separator: options.signatureSeparator,
  };
  const common = {
    name,
    retention: '3d' as const,
    algorithm,
    describe,
    handshake: options.handshake,
  };
  if (options.timestampHeader) {
    return timestampedHmac<E>({
      ...common,
      signature,
      timestamp: { header: options.timestampHeader, unit: options.timestampUnit },
      signed: options.signedContent,
    })({ secret: options.secret, tolerance: options.tolerance, retention: options.retention });
  }
  return bodyHmac<E>({ ...common, signature, signed: options.signedContent })({
    secret: options.secret,
    retention: options.retention,
  });
}
