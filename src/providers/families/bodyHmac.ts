/**
 * The body-HMAC family: an HMAC of the raw body (or of the notification URL and the body) under a
 * shared secret, hex or base64 in a header, perhaps prefixed (`sha256=`), perhaps several in one
 * header (any may match), any of several secrets while rotating. GitHub, Shopify, Lemon Squeezy,
 * Intercom, Square, and the generic `hmac()`.
 *
 * No timestamp: a captured request verifies forever, so dedup keys on a digest of the signed body
 * unless the id is inside it, and the retention is also the window in which a replay is caught.
 */
import { type KeyObject, timingSafeEqual } from 'node:crypto';
import type { Duration } from '../../core/duration.js';
import { ConfigError, VerificationError } from '../../errors.js';
import {
  asBuffer,
  DEFAULT_TOLERANCE_MS,
  decodeStrict,
  type HmacAlgorithm,
  header,
  requireHeader,
  type SecretInput,
} from '../shared.js';
import type { AuthenticatingProvider, DeliveryInput, HeaderReader } from '../types.js';
import { assemble, type BaseDeclaration, describer, readSecrets, type SecretSpec } from './define.js';
import { checkValidityClaims, readCompactJws, requireBodyHash } from './jws.js';
import { macOf } from './mac.js';

/** Where a signature travels: a header, its encoding, a prefix, several per header. */
export interface SignatureSpec {
  /** The header carrying the signature. @example 'x-hub-signature-256' */
  readonly header: string;
  /** @default 'hex' */
  readonly encoding?: 'hex' | 'base64' | undefined;
  /** Before each signature (`'sha256='`, `'v0='`); values without it are ignored. @default '' */
  readonly prefix?: string | undefined;
  /** Separates several signatures in one header, any one of which may match (`','`, `' '`). */
  readonly separator?: string | undefined;
  /**
   * Further headers carrying signatures of the same content, any one of which may match (Box's
   * `box-signature-secondary`, made with the second key). At least one of all the headers must be
   * present.
   */
  readonly alsoIn?: readonly string[] | undefined;
}

/** What a scheme signs, given the raw pieces of a delivery. */
export interface SignedContentInput {
  readonly body: Uint8Array;
  /** The timestamp exactly as sent, when the scheme has one. */
  readonly timestamp: string | undefined;
  readonly headers: HeaderReader;
  /** The URL the sender called, as the delivery gives it (HubSpot signs it). */
  readonly url?: string | undefined;
}

export interface BodyHmacDeclaration<E> extends BaseDeclaration<E, undefined> {
  /** How the secret is read and which of the sender's other credentials are refused. */
  readonly secret?: SecretSpec | undefined;
  /** @default 'sha256' */
  readonly algorithm?: HmacAlgorithm | undefined;
  /**
   * Instead of `signature`: for a scheme that keeps its signatures inside the body (Adyen: one per
   * notification item). Every part must verify under one of the keys; no part is refused.
   */
  readonly read?: ((input: DeliveryInput) => readonly BodyHmacPart[]) | undefined;
  /** Where the signature travels; or `jws` or `read` instead. */
  readonly signature?: SignatureSpec | undefined;
  /**
   * Instead of `signature`: a compact JWS signed with the secret (`HS256`), whose claims bind the
   * body (Netlify's `X-Webhook-Signature`). `algorithm` is then the JWS's hash.
   */
  readonly jws?: HmacJwsSpec | undefined;
  /** Headers every delivery must carry, checked with the signature (GitHub's `X-GitHub-Event`). */
  readonly requireHeaders?: readonly string[] | undefined;
  /**
   * The URL is signed before the body (Square): `option` names the provider option holding the URL
   * as entered in the sender's dashboard; without it, the delivery's `url` is used.
   */
  readonly signsUrl?: { readonly option: string; readonly what: string } | undefined;
  /** What is signed, when it is neither the body nor URL + body: pieces fed to the HMAC in order. */
  readonly signed?: ((input: SignedContentInput) => readonly (Uint8Array | string)[]) | undefined;
}

/** One signed part of a body that carries its own signatures (`read`). */
export interface BodyHmacPart {
  /** The signature as sent, in `encoding`. */
  readonly signature: string;
  readonly encoding: 'hex' | 'base64';
  /** Names the signature in messages. @example 'notificationItems[0] hmacSignature' */
  readonly signatureName: string;
  /** Everything the HMAC covers, in order. */
  readonly signed: readonly (Uint8Array | string)[];
}

/** A compact JWS made with the shared secret: `alg` `HS256`, its claims binding the body. */
export interface HmacJwsSpec {
  /** The header holding it. @example 'x-webhook-signature' */
  readonly header: string;
  /** A claim holding the hex SHA-256 of the raw body, which must match. @example 'sha256' */
  readonly bodyHashClaim: string;
  /** The `iss` the sender puts in every token. @example 'netlify' */
  readonly issuer?: string | undefined;
}

const HMAC_JWS_ALG: Record<HmacAlgorithm, string> = { sha1: '', sha256: 'HS256', sha512: 'HS512' };

/** The options every body-HMAC provider takes (a provider adds its own, such as Square's URL). */
export interface BodyHmacOptions {
  secret: SecretInput;
  retention?: Duration | undefined;
}

const ALGORITHMS: readonly string[] = ['sha1', 'sha256', 'sha512'];

/** Refuses an algorithm node:crypto HMAC families do not offer. */
export function checkAlgorithm(algorithm: unknown, label: string): HmacAlgorithm {
  if (typeof algorithm !== 'string' || !ALGORITHMS.includes(algorithm)) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: ${label} algorithm must be sha1, sha256 or sha512, got ${JSON.stringify(algorithm)}`,
    );
  }
  return algorithm as HmacAlgorithm;
}

/**
 * Reads the offered signatures from their header: `missing_header` when absent, `malformed_header`
 * when no value (after the prefix) decodes in the encoding. Canonical base64 only (see
 * `decodeStrict`). Built once per provider.
 * @internal
 */
export function signatureReader(spec: SignatureSpec): (headers: HeaderReader) => Buffer[] {
  const { header: name, separator } = spec;
  const encoding = spec.encoding ?? 'hex';
  const prefix = spec.prefix ?? '';
  const malformed = () =>
    new VerificationError(
      'malformed_header',
      `onceonly: the ${name} header holds no ${encoding} signature${prefix ? ` prefixed '${prefix}'` : ''}`,
    );
  const one = (raw: string, out: Buffer[]) => {
    const value = raw.trim();
    if (!value.startsWith(prefix)) return;
    const decoded = decodeStrict(prefix ? value.slice(prefix.length) : value, encoding);
    if (decoded) out.push(decoded);
  };
  const read = (value: string, out: Buffer[]) => {
    if (separator) for (const part of value.split(separator)) one(part, out);
    else one(value, out);
  };
  const alsoIn = spec.alsoIn;
  if (alsoIn !== undefined && alsoIn.length > 0) {
    return (headers) => {
      const out: Buffer[] = [];
      const value = header(headers, name);
      let seen = value !== undefined;
      if (value !== undefined) read(value, out);
      for (const other of alsoIn) {
        const more = header(headers, other);
        if (more !== undefined) {
          seen = true;
          read(more, out);
        }
      }
      if (!seen) requireHeader(headers, name);
      if (out.length === 0) throw malformed();
      return out;
    };
  }
  return (headers) => {
    const value = requireHeader(headers, name);
    const out: Buffer[] = [];
    read(value, out);
    if (out.length === 0) throw malformed();
    return out;
  };
}

/** The rejection for a signature that matched under no key. */
export function noMatch(label: string): VerificationError {
  return new VerificationError(
    'invalid_signature',
    `onceonly: no ${label} signature matched; check the secret and that the body reaches onceonly unparsed`,
  );
}

/**
 * Throws `invalid_signature` unless the HMAC of `prefix` + `body` under one of the keys equals one
 * of the candidates (see {@link hmacMatches}): the hot path of every HMAC family.
 * @internal
 */
export function requireBodyHmac(
  label: string,
  algorithm: HmacAlgorithm,
  keys: readonly KeyObject[],
  prefix: string,
  body: Uint8Array,
  candidates: readonly Buffer[],
): void {
  if (!hmacMatches(algorithm, keys, prefix === '' ? [body] : [prefix, body], candidates))
    throw noMatch(label);
}

/**
 * Whether the HMAC of the pieces (strings as UTF-8) under one of the keys equals one of the
 * candidates, every pair compared in constant time (no early exit, so timing tells neither which
 * nor whether).
 * @internal
 */
export function hmacMatches(
  algorithm: HmacAlgorithm,
  keys: readonly KeyObject[],
  parts: readonly (Uint8Array | string)[],
  candidates: readonly Buffer[],
): boolean {
  let found = false;
  for (let k = 0; k < keys.length; k++) {
    const expected = macOf(algorithm, keys[k]!, parts);
    for (let c = 0; c < candidates.length; c++) {
      const candidate = candidates[c]!;
      if (candidate.length === expected.length && timingSafeEqual(expected, candidate)) found = true;
    }
  }
  return found;
}

/**
 * A body-HMAC provider factory from its declaration.
 *
 * @example
 * const factory = bodyHmac({
 *   name: 'github',
 *   retention: '4d',
 *   secret: { lookalikes: [['ghp_', 'a personal access token']], expected: 'the webhook secret' },
 *   signature: { header: 'x-hub-signature-256', prefix: 'sha256=' },
 *   event: { id: { header: 'x-github-delivery', signed: false }, type: { header: 'x-github-event' }, typeSigned: false },
 * });
 * export const github = (options: GithubOptions) => factory(options);
 */
export function bodyHmac<E>(
  d: BodyHmacDeclaration<E>,
): <O extends BodyHmacOptions>(options: O) => AuthenticatingProvider<E> {
  const label = d.label ?? d.name;
  const algorithm = checkAlgorithm(d.algorithm ?? 'sha256', label);
  const read = d.signature ? signatureReader(d.signature) : undefined;
  const jws = d.jws;
  const readParts = d.read;
  if (!read && !jws && !readParts) {
    throw new ConfigError('invalid_option', `onceonly: ${label} declares no signature`);
  }
  const jwsAlgs = [HMAC_JWS_ALG[algorithm]].filter((a) => a !== '');
  const required = d.requireHeaders ?? [];
  const describe = describer(d);
  const { signsUrl, signed } = d;

  return <O extends BodyHmacOptions>(options: O) => {
    const keys = readSecrets(label, options.secret, d.secret);
    const configured = signsUrl
      ? (options as unknown as Record<string, unknown>)[signsUrl.option]
      : undefined;
    if (signsUrl && configured !== undefined) {
      if (typeof configured !== 'string' || !/^https?:\/\//.test(configured)) {
        throw new ConfigError(
          'invalid_option',
          `onceonly: ${label} ${signsUrl.option} must be the full http(s) URL ${signsUrl.what}`,
        );
      }
    }

    /** The JWS: alg, signature under one of the keys, then issuer and body hash (trusted only now). */
    function authenticateJws(spec: HmacJwsSpec, { rawBody, headers, receivedAt }: DeliveryInput): undefined {
      const token = requireHeader(headers, spec.header).trim();
      const { claims, data, signature } = readCompactJws(token, spec.header, label, jwsAlgs);
      if (!hmacMatches(algorithm, keys, [data], [signature])) throw noMatch(label);
      if (spec.issuer !== undefined && claims.iss !== spec.issuer) {
        throw new VerificationError(
          'invalid_signature',
          `onceonly: the ${label} JWS was not issued by ${spec.issuer}`,
        );
      }
      // The family has no timestamp of its own: a standard JWT check's leeway for exp and nbf.
      checkValidityClaims(claims, receivedAt, DEFAULT_TOLERANCE_MS, label);
      requireBodyHash(claims, spec.bodyHashClaim, rawBody, label);
      return undefined;
    }

    /** Signatures inside the body: every part must verify, or the whole delivery is refused. */
    function authenticateParts(parts: readonly BodyHmacPart[]): undefined {
      if (parts.length === 0) {
        throw new VerificationError('malformed_header', `onceonly: the ${label} body carries no signed part`);
      }
      for (const part of parts) {
        const decoded = decodeStrict(part.signature.trim(), part.encoding);
        if (!decoded) {
          throw new VerificationError(
            'malformed_header',
            `onceonly: the ${part.signatureName} holds no ${part.encoding} signature`,
          );
        }
        if (!hmacMatches(algorithm, keys, part.signed, [decoded])) throw noMatch(label);
      }
      return undefined;
    }

    function authenticate(input: DeliveryInput): undefined {
      if (jws) return authenticateJws(jws, input);
      if (readParts) return authenticateParts(readParts(input));
      const { rawBody, headers, url } = input;
      const candidates = read!(headers);
      for (const name of required) requireHeader(headers, name);
      const body = asBuffer(rawBody);
      if (signed) {
        const parts = signed({ body, timestamp: undefined, headers, url });
        if (!hmacMatches(algorithm, keys, parts, candidates)) throw noMatch(label);
        return undefined;
      }
      if (signsUrl) {
        const signedUrl = (configured as string | undefined) ?? url;
        if (signedUrl === undefined) {
          throw new ConfigError(
            'invalid_option',
            `onceonly: ${label} signs the URL ${signsUrl.what}; set ${signsUrl.option}, or pass url to receive()`,
          );
        }
        requireBodyHmac(label, algorithm, keys, signedUrl, body, candidates);
        return undefined;
      }
      requireBodyHmac(label, algorithm, keys, '', body, candidates);
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
