import { ConfigError, VerificationError } from '../errors.js';
import { type Duration, parseDuration } from '../lease/duration.js';
import {
  asBuffer,
  checkTolerance,
  hmac as computeHmac,
  decodeSignature,
  type HmacAlgorithm,
  header,
  parseJsonObject,
  parseTimestamp,
  requireHeader,
  requireMatch,
  type SecretInput,
  secretKeys,
  toleranceMs,
} from './shared.js';
import type { AuthenticatingProvider, DeliveryInput, HeaderReader, Verified } from './types.js';

/** What a generic HMAC scheme signs, given the raw pieces of a delivery. */
export interface SignedContentInput {
  readonly body: Uint8Array;
  /** The timestamp header's value exactly as sent, when the scheme has one. */
  readonly timestamp: string | undefined;
  readonly headers: HeaderReader;
}

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
  /** Require a JSON object body and parse it; `false` passes the raw bytes as the event. @default true */
  json?: boolean;
  /** How long completed keys are remembered by default. @default '3d' */
  retention?: Duration;
}

/**
 * A provider for any HMAC-signed webhook: header names, algorithm, encoding, prefix, what is
 * signed, an optional timestamp with tolerance, and where the event id and type come from.
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
  const name = options.name;
  if (typeof name !== 'string' || !/^[a-z0-9][a-z0-9_.-]*$/i.test(name)) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: hmac name must be a short identifier like 'acme', got ${JSON.stringify(name)}`,
    );
  }
  if (typeof options.signatureHeader !== 'string' || options.signatureHeader === '') {
    throw new ConfigError('invalid_option', `onceonly: hmac provider '${name}' needs signatureHeader`);
  }
  const keys = secretKeys(name, options.secret);
  const algorithm = options.algorithm ?? 'sha256';
  if (!['sha1', 'sha256', 'sha512'].includes(algorithm)) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: hmac algorithm must be sha1, sha256 or sha512, got ${JSON.stringify(algorithm)}`,
    );
  }
  const encoding = options.encoding ?? 'hex';
  const prefix = options.signaturePrefix ?? '';
  const tolerance = toleranceMs(options.tolerance);
  const json = options.json ?? true;
  const retentionMs = parseDuration(options.retention ?? '3d', 'retention');
  const signedContent =
    options.signedContent ??
    (options.timestampHeader
      ? ({ timestamp, body }: SignedContentInput) => [timestamp ?? '', '.', body]
      : ({ body }: SignedContentInput) => [body]);

  function candidates(value: string): Buffer[] {
    const parts = options.signatureSeparator ? value.split(options.signatureSeparator) : [value];
    const out: Buffer[] = [];
    for (const raw of parts) {
      const part = raw.trim();
      if (!part.startsWith(prefix)) continue;
      const decoded = decodeSignature(part.slice(prefix.length), encoding);
      if (decoded) out.push(decoded);
    }
    if (out.length === 0) {
      throw new VerificationError(
        'malformed_header',
        `onceonly: the ${options.signatureHeader} header holds no ${encoding} signature${prefix ? ` prefixed '${prefix}'` : ''}`,
      );
    }
    return out;
  }

  /** The signature checks: header, optional timestamp and tolerance, HMAC. Shared by `authenticate` and `verify`. */
  function authenticate({ rawBody, headers, receivedAt }: DeliveryInput): void {
    const offered = candidates(requireHeader(headers, options.signatureHeader));
    let timestamp: string | undefined;
    if (options.timestampHeader) {
      timestamp = requireHeader(headers, options.timestampHeader);
      checkTolerance(
        parseTimestamp(options.timestampHeader, timestamp, options.timestampUnit),
        receivedAt,
        tolerance,
      );
    }
    const body = asBuffer(rawBody);
    const content = signedContent({ body, timestamp, headers });
    requireMatch(
      name,
      keys.map((key) => computeHmac(algorithm, key, content)),
      offered,
    );
  }

  return {
    name,
    retentionMs,
    authenticate,
    verify(input: DeliveryInput): Verified<E> {
      authenticate(input);
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
        return { event, type, id, dedup: 'id' };
      }
      const headerId = options.idHeader ? header(headers, options.idHeader) : undefined;
      if (options.idHeader && options.idSigned) {
        if (headerId === undefined)
          throw new VerificationError(
            'missing_header',
            `onceonly: the ${options.idHeader} header is missing`,
          );
        return { event, type, id: headerId, dedup: 'id' };
      }
      // No signed id: key on the digest of the signed body, so a replay with a fresh id is a duplicate.
      return { event, type, id: headerId, dedup: 'body' };
    },
  };
}
