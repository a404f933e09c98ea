/**
 * The timestamped-HMAC family: an HMAC of the signing time and the raw body, with the time checked
 * against a tolerance in both directions, so a late replay fails. The signature and its time come
 * as a `t=..,v1=..` list in one header (Stripe, Paddle), or as a signature header beside a timestamp
 * header (Slack, Zoom) or a timestamp field inside the signed body (Linear); a declaration may also
 * read all three itself (Mailgun, whose signature travels in the body). Several signatures per
 * header and several secrets while rotating; any one may match.
 */

import type { Duration } from '../../core/duration.js';
import { ConfigError, VerificationError } from '../../errors.js';
import {
  asBuffer,
  checkTolerance,
  decodeStrict,
  type HmacAlgorithm,
  parseIsoTimestamp,
  parseJsonObject,
  parseTimestamp,
  requireHeader,
  type SecretInput,
  toleranceMs,
} from '../shared.js';
import type { AuthenticatingProvider, DeliveryInput } from '../types.js';
import {
  checkAlgorithm,
  hmacMatches,
  noMatch,
  requireBodyHmac,
  type SignatureSpec,
  type SignedContentInput,
  signatureReader,
} from './bodyHmac.js';
import {
  assemble,
  type BaseDeclaration,
  describer,
  type FieldPath,
  fieldAt,
  readSecrets,
  type SecretSpec,
} from './define.js';

/** A header holding the timestamp and the signatures as one list: `t=<ts>,v1=<sig>[,v1=<sig>]`. */
export interface SignatureListSpec {
  readonly header: string;
  /** Separates the pairs: `','` (Stripe), `';'` (Paddle). Each pair splits at its first `=`. */
  readonly separator: string;
  /** The key of the timestamp pair: `'t'`, `'ts'`. More than one is `malformed_header`. */
  readonly timestamp: string;
  /** The key of each signature pair: `'v1'`, `'h1'`; pairs with other keys are ignored. */
  readonly signature: string;
  /** @default 'hex' */
  readonly encoding?: 'hex' | 'base64' | undefined;
  /**
   * Separates whole lists in one header, each with its own timestamp, any of which may match
   * (Persona while rotating: `t=..,v1=.. t=..,v1=..`, separated by a space).
   */
  readonly groupSeparator?: string | undefined;
}

/**
 * The unit of a timestamp: integer seconds or milliseconds since the epoch, or an RFC 3339 date-time
 * with its offset (`2026-11-30T05:00:00Z`, `2026-11-29T21:00:00-08:00`; Zendesk, Box), signed as sent.
 */
export type TimestampUnit = 's' | 'ms' | 'rfc3339';

/** Where the signing time is, beside a signature header. */
export type TimestampSource =
  | { readonly header: string; readonly unit?: TimestampUnit | undefined }
  | { readonly bodyField: FieldPath; readonly unit?: 's' | 'ms' | undefined };

/** The time of a timestamp as sent, in ms since the epoch; `malformed_header` when it is not one. */
export function timestampMs(name: string, value: string, unit: TimestampUnit): number {
  return unit === 'rfc3339' ? parseIsoTimestamp(name, value) : parseTimestamp(name, value, unit);
}

/** What a declaration's own `read` finds in a delivery (Mailgun). */
export interface TimestampedParts {
  /** The signing time exactly as sent, an integer in `unit`. */
  readonly timestamp: string;
  /** Names the timestamp in messages. */
  readonly timestampName: string;
  /** The offered signatures, still encoded. */
  readonly signatures: readonly string[];
  /** Names the signature in messages. */
  readonly signatureName: string;
  /** Everything the HMAC covers, in order. */
  readonly signed: readonly (Uint8Array | string)[];
  /** The parsed body, when reading the parts parsed it (handed to the read step). */
  readonly parsed?: Record<string, unknown> | undefined;
}

export interface TimestampedDeclaration<E> extends BaseDeclaration<E, Record<string, unknown> | undefined> {
  readonly secret?: SecretSpec | undefined;
  /** @default 'sha256' */
  readonly algorithm?: HmacAlgorithm | undefined;
  /** The signature: a `t=..,v1=..` list holding the time too, or a header of its own. */
  readonly signature: SignatureListSpec | SignatureSpec;
  /** Where the time is, for a signature header of its own. */
  readonly timestamp?: TimestampSource | undefined;
  /**
   * What precedes the body in the signed content, from the timestamp exactly as sent. One string,
   * fed to the HMAC before the body (one crossing into C++, not one per piece).
   * @default (t) => `${t}.`
   * @example (t) => `v0:${t}:`
   */
  readonly signedPrefix?: ((timestamp: string, input: DeliveryInput) => string) | undefined;
  /** What is signed, when it is not a prefix and the body: pieces fed to the HMAC in order. */
  readonly signed?: ((input: SignedContentInput) => readonly (Uint8Array | string)[]) | undefined;
  /** @default '5m' */
  readonly tolerance?: Duration | undefined;
  /** Reads signature, time and signed content itself, for a scheme that keeps them in the body. */
  readonly read?: ((input: DeliveryInput) => TimestampedParts) | undefined;
}

export interface TimestampedOptions {
  secret: SecretInput;
  tolerance?: Duration | undefined;
  retention?: Duration | undefined;
}

const dot = (t: string) => `${t}.`;

/**
 * Reads `t=..,v1=..` in one pass, decoding each signature as it is found: no list of pairs or of
 * strings is built on this hot path. Same rules as splitting at the separator, then at the first `=`.
 */
function listReader(spec: SignatureListSpec): (value: string) => { timestamp: string; candidates: Buffer[] } {
  const { header: name, separator, timestamp: tKey, signature: sKey } = spec;
  const encoding = spec.encoding ?? 'hex';
  return (value) => {
    let timestamp: string | undefined;
    const candidates: Buffer[] = [];
    for (let from = 0; from <= value.length; ) {
      let end = value.indexOf(separator, from);
      if (end === -1) end = value.length;
      const at = value.indexOf('=', from);
      if (at > from && at < end) {
        const k = value.slice(from, at).trim();
        if (k === tKey) {
          // Two timestamps leave it open which one was signed.
          if (timestamp !== undefined) {
            throw new VerificationError(
              'malformed_header',
              `onceonly: the ${name} header has more than one ${tKey}= timestamp`,
            );
          }
          timestamp = value.slice(at + 1, end).trim();
        } else if (k === sKey) {
          const decoded = decodeStrict(value.slice(at + 1, end).trim(), encoding);
          if (decoded) candidates.push(decoded);
        }
      }
      from = end + separator.length;
    }
    if (timestamp === undefined) {
      throw new VerificationError(
        'malformed_header',
        `onceonly: the ${name} header has no ${tKey}= timestamp`,
      );
    }
    if (candidates.length === 0) {
      throw new VerificationError(
        'malformed_header',
        `onceonly: the ${name} header holds no ${encoding} ${sKey}= signature`,
      );
    }
    return { timestamp, candidates };
  };
}

function bodyTimestamp(
  event: Record<string, unknown>,
  path: FieldPath,
  unit: TimestampUnit,
  label: string,
): string {
  const value = typeof path === 'string' ? event[path] : fieldAt(event, path);
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return String(value);
  if (typeof value === 'string' && /^[0-9]{1,16}$/.test(value)) return value;
  const name = typeof path === 'string' ? path : path.join('.');
  throw new VerificationError(
    'invalid_body',
    `onceonly: the ${label} body has no integer ${name} (${unit === 'ms' ? 'milliseconds' : 'seconds'})`,
  );
}

/**
 * A timestamped-HMAC provider factory from its declaration.
 *
 * @example
 * const factory = timestampedHmac({
 *   name: 'stripe',
 *   retention: '4d',
 *   signature: { header: 'stripe-signature', separator: ',', timestamp: 't', signature: 'v1' },
 *   signedPrefix: (t) => `${t}.`,
 *   event: { id: 'id', type: 'type', typeSigned: true },
 * });
 */
export function timestampedHmac<E>(
  d: TimestampedDeclaration<E>,
): (options: TimestampedOptions) => AuthenticatingProvider<E> {
  const label = d.label ?? d.name;
  const algorithm = checkAlgorithm(d.algorithm ?? 'sha256', label);
  const signedPrefix = d.signedPrefix ?? dot;
  const describe = describer(d, (parsed) => parsed);
  const sig = d.signature;
  const list =
    'timestamp' in sig && 'separator' in sig && typeof sig.timestamp === 'string'
      ? listReader(sig as SignatureListSpec)
      : undefined;
  const single = list ? undefined : signatureReader(sig as SignatureSpec);
  const source = d.timestamp;
  if (!list && !d.read && source === undefined) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: ${label} declares a signature header but no timestamp`,
    );
  }
  const inHeader = source !== undefined && 'header' in source ? source : undefined;
  const inBody = source !== undefined && 'bodyField' in source ? source : undefined;
  const unit: TimestampUnit = source?.unit ?? 's';
  const groupSeparator = list ? (sig as SignatureListSpec).groupSeparator : undefined;
  const encoding = ('encoding' in sig ? sig.encoding : undefined) ?? 'hex';

  return (options) => {
    const keys = readSecrets(label, options.secret, d.secret);
    const tolerance = toleranceMs(options.tolerance ?? d.tolerance);

    function authenticate(input: DeliveryInput): Record<string, unknown> | undefined {
      const { rawBody, headers, receivedAt } = input;
      if (d.read) {
        // The scheme keeps its parts where only it knows (Mailgun: fields of the body).
        const parts = d.read(input);
        const candidates: Buffer[] = [];
        for (const value of parts.signatures) {
          const decoded = decodeStrict(value.trim(), encoding);
          if (decoded) candidates.push(decoded);
        }
        if (candidates.length === 0) {
          throw new VerificationError(
            'malformed_header',
            `onceonly: the ${parts.signatureName} holds no ${encoding} signature`,
          );
        }
        checkTolerance(timestampMs(parts.timestampName, parts.timestamp, unit), receivedAt, tolerance);
        if (!hmacMatches(algorithm, keys, parts.signed, candidates)) throw noMatch(label);
        return parts.parsed;
      }
      if (list && groupSeparator !== undefined) {
        // Several whole lists (one per secret while rotating): any list's signature may match.
        let found = false;
        for (const group of requireHeader(headers, sig.header).split(groupSeparator)) {
          if (group.trim() === '') continue;
          const { timestamp, candidates } = list(group);
          checkTolerance(
            timestampMs(`${sig.header} ${(sig as SignatureListSpec).timestamp}=`, timestamp, unit),
            receivedAt,
            tolerance,
          );
          const parts = d.signed
            ? d.signed({ body: asBuffer(rawBody), timestamp, headers, url: input.url })
            : [signedPrefix(timestamp, input), rawBody];
          if (hmacMatches(algorithm, keys, parts, candidates)) found = true;
        }
        if (!found) throw noMatch(label);
        return undefined;
      }
      if (list) {
        const { timestamp, candidates } = list(requireHeader(headers, sig.header));
        checkTolerance(
          timestampMs(`${sig.header} ${(sig as SignatureListSpec).timestamp}=`, timestamp, unit),
          receivedAt,
          tolerance,
        );
        if (d.signed) {
          const parts = d.signed({ body: asBuffer(rawBody), timestamp, headers, url: input.url });
          if (!hmacMatches(algorithm, keys, parts, candidates)) throw noMatch(label);
        } else requireBodyHmac(label, algorithm, keys, signedPrefix(timestamp, input), rawBody, candidates);
        return undefined;
      }
      const candidates = single!(headers);
      if (inBody) {
        // The time is a field of the signed body: check the signature over the body first, then
        // read the time from the bytes it vouches for.
        requireBodyHmac(label, algorithm, keys, '', rawBody, candidates);
        const event = parseJsonObject(rawBody);
        const timestamp = bodyTimestamp(event, inBody.bodyField, unit, label);
        checkTolerance(timestampMs(label, timestamp, unit), receivedAt, tolerance);
        return event;
      }
      const timestamp = requireHeader(headers, inHeader!.header);
      checkTolerance(timestampMs(inHeader!.header, timestamp, unit), receivedAt, tolerance);
      if (d.signed) {
        const parts = d.signed({ body: asBuffer(rawBody), timestamp, headers, url: input.url });
        if (!hmacMatches(algorithm, keys, parts, candidates)) throw noMatch(label);
      } else requireBodyHmac(label, algorithm, keys, signedPrefix(timestamp, input), rawBody, candidates);
      return undefined;
    }

    return assemble({
      name: d.name,
      retention: options.retention,
      defaultRetention: d.retention,
      identity: keys,
      keys,
      authenticate,
      describe,
      handshake: d.handshake,
      options,
    });
  };
}
