/**
 * The asymmetric family: the sender signs with its private key and the receiver checks with the
 * public one, so there is no secret to leak. Detached signatures over the signed content (Ed25519:
 * Discord; ECDSA P-256: SendGrid; RSA PKCS#1 v1.5 or PSS: AWS SNS, PayPal), or a compact JWS / JWT
 * whose claims bind the body (Plaid). The public key is configured (hex, base64 DER, PEM, JWK), or
 * fetched from the sender through `fetchedKeys` (see `fetchedKeys.ts`): never from a URL a delivery
 * names without checking it against the hosts the sender's declaration allows.
 *
 * The senders' SDKs rarely check freshness; the family applies its tolerance (both directions) to
 * the signed timestamp wherever the scheme has one.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import type { Duration } from '../../core/duration.js';
import { ConfigError, VerificationError } from '../../errors.js';
import {
  asBuffer,
  checkTolerance,
  decodeSignature,
  decodeStrict,
  parseTimestamp,
  requireHeader,
  toleranceMs,
} from '../shared.js';
import type { AuthenticatingProvider, DeliveryInput } from '../types.js';
import type { CertificateRules } from './certChain.js';
import { assemble, type BaseDeclaration, describer } from './define.js';
import {
  type AllowedHost,
  type FetchedKeyOptions,
  KeyFetcher,
  type KeyFormat,
  type KeySet,
} from './fetchedKeys.js';
import { checkValidityClaims, readCompactJws, requireBodyHash } from './jws.js';
import { type AsymmetricAlgorithm, fits, JWS, type JwsAlgorithm, SCHEMES, verifyWith } from './signatures.js';
import { flagTestKeys } from './testKeys.js';

export type { AsymmetricAlgorithm, JwsAlgorithm } from './signatures.js';
export { verifyWith } from './signatures.js';

/** How configured public keys are written. */
export interface PublicKeySpec {
  /**
   * `'ed25519-hex'`: the raw 32-byte Ed25519 key as 64 hex characters (Discord); `'spki'`: a
   * SubjectPublicKeyInfo as base64 DER (SendGrid's dashboard) or PEM; `'jwk'`: a JSON Web Key as
   * JSON text or an object. Whatever the format, the key must suit the algorithm.
   */
  readonly format: 'ed25519-hex' | 'spki' | 'jwk';
  /** What to copy from the sender's dashboard, for messages. */
  readonly expected: string;
}

/** A detached signature in a header. */
export interface AsymmetricSignatureSpec {
  readonly header: string;
  readonly encoding: 'hex' | 'base64' | 'base64url';
  /** Before the signature, stripped (`'v1='`). */
  readonly prefix?: string | undefined;
  /** ECDSA only: `'der'` (ASN.1) or `'ieee-p1363'` (r ‖ s). @default 'der' */
  readonly dsaEncoding?: 'der' | 'ieee-p1363' | undefined;
  /** The decoded length, when the scheme fixes it (Ed25519: 64). */
  readonly length?: number | undefined;
}

/** A compact JWS (or JWT) carried by the delivery, whose claims bind the body. */
export interface JwsSpec {
  /** The header holding it. @example 'plaid-verification' */
  readonly header: string;
  /** The algorithms accepted, by the JWS `alg`. @example ['ES256'] */
  readonly algorithms: readonly JwsAlgorithm[];
  /**
   * A claim holding the hex SHA-256 of the raw body, which must match: without it the JWS would
   * vouch for nothing the delivery carries. @example 'request_body_sha256'
   */
  readonly bodyHashClaim: string;
  /** The claim whose time (seconds) is checked against the tolerance. @default 'iat' */
  readonly timeClaim?: string | undefined;
}

/** Keys the family fetches from the sender. */
export interface FetchedKeysSpec {
  /**
   * The URL of the sender's keys, when fixed (a JWKS endpoint), or made from the key id the
   * signature names (Plaid's per-key endpoint: one cached entry per id); else the delivery names it
   * (`read`'s `keyUrl`, or `urlHeader`).
   */
  readonly url?: string | ((keyId: string | undefined) => string) | undefined;
  /** A header naming the key URL (PayPal's `paypal-cert-url`). */
  readonly urlHeader?: string | undefined;
  /** The hosts the sender serves its keys from: exact names, `'*.example.com'`, or anchored RegExps. */
  readonly allowedHosts: readonly AllowedHost[];
  /** What the URL serves. */
  readonly format: KeyFormat;
  /**
   * For a certificate (`pem`): the chain and name it must have (AWS SNS, PayPal). Without it, any
   * certificate the allowed host serves is used as it is.
   */
  readonly certificates?: CertificateRules | undefined;
}

/** What a declaration's own `read` finds in a delivery, for schemes that keep their parts in the body. */
export interface AsymmetricParts {
  /** The signature, still encoded in the declaration's `signature.encoding` (or `encoding` here). */
  readonly signature: string;
  readonly encoding?: 'hex' | 'base64' | 'base64url' | undefined;
  readonly signatureName: string;
  /** Everything the signature covers, in order. */
  readonly signed: readonly (Uint8Array | string)[];
  /** The signing time in ms since the epoch, checked against the tolerance. */
  readonly timestampMs?: number | undefined;
  /** The algorithm, when the delivery says which (AWS SNS `SignatureVersion`). @default the declaration's */
  readonly algorithm?: AsymmetricAlgorithm | undefined;
  /** The key URL the delivery names (checked against the allowed hosts before any request). */
  readonly keyUrl?: string | undefined;
  /** The key id the delivery names, looked up in the key set. */
  readonly keyId?: string | undefined;
  /** The parsed body, handed to the read step. */
  readonly parsed?: Record<string, unknown> | undefined;
}

/** What the family's check hands the read step. */
export interface AsymmetricAuth {
  readonly parsed?: Record<string, unknown> | undefined;
  /** A JWS's verified claims. */
  readonly claims?: Record<string, unknown> | undefined;
}

export interface AsymmetricDeclaration<E> extends BaseDeclaration<E, AsymmetricAuth | undefined> {
  /** The detached-signature algorithm (not used with `jws`, whose `alg` says). */
  readonly algorithm?: AsymmetricAlgorithm | undefined;
  /** How configured keys are written; omit when keys are only fetched. */
  readonly publicKey?: PublicKeySpec | undefined;
  readonly signature?: AsymmetricSignatureSpec | undefined;
  /** A header with the signing time (integer), checked against the tolerance. */
  readonly timestamp?: { readonly header: string; readonly unit?: 's' | 'ms' | undefined } | undefined;
  /**
   * What the signature covers, from the timestamp exactly as sent.
   * @default (input, timestamp) => [timestamp ?? '', body]
   */
  readonly signed?:
    | ((input: DeliveryInput, timestamp: string | undefined) => readonly (Uint8Array | string)[])
    | undefined;
  /** Reads signature, signed content, time and key URL itself (AWS SNS: fields of the body). */
  readonly read?: ((input: DeliveryInput) => AsymmetricParts) | undefined;
  readonly jws?: JwsSpec | undefined;
  readonly fetchedKeys?: FetchedKeysSpec | undefined;
  /** @default '5m' */
  readonly tolerance?: Duration | undefined;
}

export interface AsymmetricOptions extends FetchedKeyOptions {
  /** The sender's public key(s); an array while rotating (any one may match). */
  publicKey?: string | object | readonly (string | object)[] | undefined;
  tolerance?: Duration | undefined;
  retention?: Duration | undefined;
}

// DER prefix of an Ed25519 SubjectPublicKeyInfo; the raw 32-byte key follows.
const ED25519_SPKI = Buffer.from('302a300506032b6570032100', 'hex');

/** Reads configured public keys per the declaration; `ConfigError` for anything that is not a key of the right kind. */
export function publicKeys(
  label: string,
  input: AsymmetricOptions['publicKey'],
  spec: PublicKeySpec,
  accepts: (key: KeyObject) => boolean,
): KeyObject[] {
  const list: readonly unknown[] =
    input === undefined ? [] : Array.isArray(input) ? input : [input as string | object];
  if (list.length === 0) {
    throw new ConfigError('invalid_secret', `onceonly: ${label} needs publicKey, ${spec.expected}`);
  }
  return list.map((raw, i) => {
    let key: KeyObject | undefined;
    try {
      key = readKey(raw, spec.format);
    } catch (cause) {
      throw new ConfigError(
        'invalid_secret',
        `onceonly: ${label} publicKey #${i + 1} is not a public key; copy ${spec.expected}`,
        { cause },
      );
    }
    if (key === undefined || key.type !== 'public' || !accepts(key)) {
      throw new ConfigError(
        'invalid_secret',
        `onceonly: ${label} publicKey #${i + 1} is not a key of the kind it signs with; copy ${spec.expected}`,
      );
    }
    return key;
  });
}

function readKey(raw: unknown, format: PublicKeySpec['format']): KeyObject | undefined {
  if (format === 'jwk') {
    const jwk = typeof raw === 'string' ? (JSON.parse(raw) as object) : raw;
    if (jwk === null || typeof jwk !== 'object' || 'd' in jwk) return undefined;
    return createPublicKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' });
  }
  const text = typeof raw === 'string' ? raw.trim() : '';
  if (format === 'ed25519-hex') {
    const bytes = decodeSignature(text, 'hex');
    if (bytes?.length !== 32) return undefined;
    return createPublicKey({ key: Buffer.concat([ED25519_SPKI, bytes]), format: 'der', type: 'spki' });
  }
  if (text.startsWith('-----BEGIN')) return createPublicKey(text);
  const der = decodeSignature(text.replace(/\s+/g, ''), 'base64');
  if (!der) return undefined;
  return createPublicKey({ key: der, format: 'der', type: 'spki' });
}

function signatureError(label: string): VerificationError {
  return new VerificationError(
    'invalid_signature',
    `onceonly: the ${label} signature did not verify; check the public key and that the body reaches onceonly unparsed`,
  );
}

function concat(parts: readonly (Uint8Array | string)[]): Buffer {
  if (parts.length === 2 && typeof parts[0] === 'string' && parts[1] instanceof Uint8Array) {
    // The usual timestamp + body: one copy.
    const head = parts[0];
    const body = parts[1];
    const out = Buffer.allocUnsafe(Buffer.byteLength(head) + body.byteLength);
    const n = out.write(head, 0, 'utf8');
    out.set(body, n);
    return out;
  }
  return Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)));
}

/**
 * An asymmetric provider factory from its declaration. Synchronous when its keys are configured;
 * with `fetchedKeys`, `authenticate` and `verify` return promises.
 *
 * @example
 * const factory = asymmetric({
 *   name: 'discord',
 *   retention: '1d',
 *   algorithm: 'ed25519',
 *   publicKey: { format: 'ed25519-hex', expected: 'the Public Key from the Developer Portal' },
 *   signature: { header: 'x-signature-ed25519', encoding: 'hex', length: 64 },
 *   timestamp: { header: 'x-signature-timestamp' },
 *   event: { id: 'id', type: 'type', typeSigned: true },
 * });
 */
export function asymmetric<E>(
  d: AsymmetricDeclaration<E>,
): (options: AsymmetricOptions) => AuthenticatingProvider<E> {
  const plan = planOf(d);
  const describe = describer(d, (auth) => auth?.parsed);
  return (options) => {
    const verifier = new AsymmetricVerifier(d, plan, options);
    const authenticate = d.jws
      ? (input: DeliveryInput) => verifier.compact(input)
      : (input: DeliveryInput) => verifier.detached(input);
    const provider = assemble({
      name: d.name,
      retention: options.retention,
      defaultRetention: d.retention,
      // Fetched keys are the sender's, the same for every endpoint: they name none.
      identity: verifier.configured.length > 0 ? verifier.configured : undefined,
      authenticate,
      describe,
      handshake: d.handshake,
      options,
    });
    return flagTestKeys(plan.label, provider, options);
  };
}

/** What a declaration settles for every provider made from it, once it is found sound. */
interface Plan {
  readonly label: string;
  /** The detached-signature scheme (none with `jws`). */
  readonly scheme: (typeof SCHEMES)[AsymmetricAlgorithm] | undefined;
  /** Whether a configured key suits the declaration's algorithm (or one of its JWS algs). */
  readonly accepts: (key: KeyObject) => boolean;
  readonly dsa: 'der' | 'ieee-p1363';
  readonly signed: (input: DeliveryInput, timestamp: string | undefined) => readonly (Uint8Array | string)[];
}

/** Checks a declaration (`ConfigError` for one that cannot verify anything) and settles its plan. */
function planOf<E>(d: AsymmetricDeclaration<E>): Plan {
  const label = d.label ?? d.name;
  const jws = d.jws;
  if (jws) {
    for (const alg of jws.algorithms) {
      if (!Object.hasOwn(JWS, alg)) {
        throw new ConfigError(
          'invalid_option',
          `onceonly: ${label} accepts JWS alg ${String(alg)}, which onceonly does not`,
        );
      }
    }
  } else if (d.algorithm === undefined || !Object.hasOwn(SCHEMES, d.algorithm)) {
    throw new ConfigError('invalid_option', `onceonly: ${label} declares no asymmetric algorithm`);
  } else if (!d.signature && !d.read) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: ${label} declares neither a signature header nor a read`,
    );
  }
  const scheme = d.algorithm ? SCHEMES[d.algorithm] : undefined;
  const accepts = (key: KeyObject) =>
    jws ? jws.algorithms.some((alg) => fits(key, JWS[alg].scheme)) : fits(key, scheme!);
  const dsa = d.signature?.dsaEncoding ?? 'der';
  const signed =
    d.signed ?? ((input: DeliveryInput, t: string | undefined) => [t ?? '', asBuffer(input.rawBody)]);
  if (!d.fetchedKeys && !d.publicKey) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: ${label} declares neither configured nor fetched keys`,
    );
  }
  return { label, scheme, accepts, dsa, signed };
}

/**
 * One provider's verification: its tolerance, its configured keys or the fetcher of the sender's,
 * and the two ways a delivery is checked (a detached signature, a compact JWS).
 */
class AsymmetricVerifier<E> {
  private readonly label: string;
  private readonly tolerance: number;
  /** The configured keys; empty when keys are fetched. */
  readonly configured: KeyObject[];
  private readonly fetcher: KeyFetcher | undefined;

  constructor(
    private readonly d: AsymmetricDeclaration<E>,
    private readonly plan: Plan,
    options: AsymmetricOptions,
  ) {
    const label = plan.label;
    const fetched = d.fetchedKeys;
    this.label = label;
    this.tolerance = toleranceMs(options.tolerance ?? d.tolerance);
    this.configured =
      d.publicKey && (options.publicKey !== undefined || !fetched)
        ? publicKeys(label, options.publicKey, d.publicKey, plan.accepts)
        : [];
    this.fetcher = fetched
      ? new KeyFetcher(
          label,
          { allowedHosts: fetched.allowedHosts, format: fetched.format, certificates: fetched.certificates },
          options,
        )
      : undefined;
    if (typeof fetched?.url === 'string' && this.fetcher) this.fetcher.check(fetched.url);
  }

  /** The key URL for a delivery: fixed, named by a header, or read from the delivery. */
  private keyUrlOf(
    input: DeliveryInput,
    parts: AsymmetricParts | undefined,
    keyId: string | undefined,
  ): string {
    const fetched = this.d.fetchedKeys;
    const fixed = fetched?.url;
    if (typeof fixed === 'function') return fixed(keyId);
    const named =
      parts?.keyUrl ?? (fetched?.urlHeader ? requireHeader(input.headers, fetched.urlHeader) : undefined);
    const url = fixed ?? named;
    if (url === undefined) {
      throw new VerificationError('invalid_body', `onceonly: the ${this.label} delivery names no key URL`);
    }
    return url;
  }

  /** A delivery verified with the key set at `url`: the set is kept from unverified ones' reach. */
  private trusted<T>(url: string, result: T): T {
    this.fetcher!.trust(url);
    return result;
  }

  /** The keys to try: by id from the set (refetched once for an id it lacks), or all of them. */
  private async keysFor(url: string, keyId: string | undefined): Promise<readonly KeyObject[]> {
    let set: KeySet = await this.fetcher!.get(url);
    if (keyId === undefined) return set.all;
    let key = set.byId.get(keyId);
    if (key === undefined) {
      set = await this.fetcher!.get(url, true);
      key = set.byId.get(keyId);
    }
    if (key === undefined) {
      throw new VerificationError(
        'unknown_key',
        `onceonly: the ${this.label} key set has no key with the id the signature names`,
      );
    }
    return [key];
  }

  /** Configured keys as they are; only without them are keys fetched (then the set is trusted). */
  private withKeys<T>(
    input: DeliveryInput,
    parts: AsymmetricParts | undefined,
    keyId: string | undefined,
    check: (keys: readonly KeyObject[]) => T,
  ): T | Promise<T> {
    if (this.configured.length > 0 || !this.fetcher) return check(this.configured);
    const url = this.keyUrlOf(input, parts, keyId);
    return this.keysFor(url, keyId).then((keys) => this.trusted(url, check(keys)));
  }

  /** A detached signature: read, check freshness, then verify under any key. */
  detached(input: DeliveryInput): AsymmetricAuth | undefined | Promise<AsymmetricAuth | undefined> {
    const { parts, signature, data } = this.d.read ? this.readParts(input) : this.readHeaders(input);
    const auth = parts?.parsed ? { parsed: parts.parsed } : undefined;
    const use = parts?.algorithm !== undefined ? SCHEMES[parts.algorithm] : this.plan.scheme!;
    const dsa = this.plan.dsa;
    const check = (keys: readonly KeyObject[]) => {
      // Every key is tried (no early exit): which one matched is not told by the time taken.
      let ok = false;
      for (const key of keys) if (verifyWith(use, data, key, signature, dsa)) ok = true;
      if (!ok) throw signatureError(this.label);
      return auth;
    };
    return this.withKeys(input, parts, parts?.keyId, check);
  }

  /** The declaration's own `read`: signature, freshness and signed content from the delivery. */
  private readParts(input: DeliveryInput): Detached {
    const parts = this.d.read!(input);
    const encoding = parts.encoding ?? this.d.signature?.encoding ?? 'base64';
    const signature = decodeStrict(parts.signature.trim(), encoding);
    if (!signature) {
      throw new VerificationError(
        'malformed_header',
        `onceonly: the ${parts.signatureName} is not a ${encoding} signature`,
      );
    }
    if (parts.timestampMs !== undefined) checkTolerance(parts.timestampMs, input.receivedAt, this.tolerance);
    return { parts, signature, data: concat(parts.signed) };
  }

  /** The signature header (and the timestamp header, checked for freshness) and the signed content. */
  private readHeaders(input: DeliveryInput): Detached {
    const { headers, receivedAt } = input;
    const sig = this.d.signature!;
    const encoding = sig.encoding ?? 'base64';
    const raw = requireHeader(headers, sig.header).trim();
    const prefix = sig.prefix ?? '';
    const signature = raw.startsWith(prefix) ? decodeStrict(raw.slice(prefix.length), encoding) : undefined;
    if (!signature || (sig.length !== undefined && signature.length !== sig.length)) {
      throw new VerificationError(
        'malformed_header',
        `onceonly: the ${sig.header} header is not a ${sig.length ? `${sig.length}-byte ` : ''}${encoding} signature`,
      );
    }
    let timestamp: string | undefined;
    const stamp = this.d.timestamp;
    if (stamp) {
      timestamp = requireHeader(headers, stamp.header);
      checkTolerance(parseTimestamp(stamp.header, timestamp, stamp.unit), receivedAt, this.tolerance);
    }
    return { parts: undefined, signature, data: concat(this.plan.signed(input, timestamp)) };
  }

  /** A compact JWS: header and alg, key, signature, then the claims (time, body hash). */
  compact(input: DeliveryInput): AsymmetricAuth | Promise<AsymmetricAuth> {
    const spec = this.d.jws!;
    const label = this.label;
    const token = requireHeader(input.headers, spec.header).trim();
    // Never `none`, never an HMAC alg keyed with a public key: only what the sender uses.
    const { head, claims, alg, data, signature } = readCompactJws(token, spec.header, label, spec.algorithms);
    const { scheme: jwsScheme, dsa: jwsDsa } = JWS[alg as JwsAlgorithm];
    const kid = typeof head.kid === 'string' ? head.kid : undefined;
    const check = (keys: readonly KeyObject[]): AsymmetricAuth => {
      let ok = false;
      for (const key of keys) if (verifyWith(jwsScheme, data, key, signature, jwsDsa)) ok = true;
      if (!ok) throw signatureError(label);
      // The claims are trusted only now, after the signature.
      const time = claims[spec.timeClaim ?? 'iat'];
      if (typeof time !== 'number' || !Number.isFinite(time)) {
        throw new VerificationError(
          'malformed_header',
          `onceonly: the ${label} JWS has no numeric ${spec.timeClaim ?? 'iat'}`,
        );
      }
      checkTolerance(Math.round(time * 1000), input.receivedAt, this.tolerance);
      checkValidityClaims(claims, input.receivedAt, this.tolerance, label);
      requireBodyHash(claims, spec.bodyHashClaim, input.rawBody, label);
      return { claims };
    };
    return this.withKeys(input, undefined, kid, check);
  }
}

/** A detached signature as read from a delivery: decoded, with everything it covers. */
interface Detached {
  readonly parts: AsymmetricParts | undefined;
  readonly signature: Buffer;
  readonly data: Buffer;
}
