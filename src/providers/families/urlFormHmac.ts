/**
 * The URL + form HMAC family (Twilio, and senders that sign the same way, such as SignalWire): an
 * HMAC of the URL the sender called followed by every form parameter, sorted by name, each name then
 * its value (repeated values de-duplicated and sorted). JSON bodies are bound instead by a
 * `bodySHA256` query parameter of the signed URL, which must equal the body's SHA-256.
 *
 * The form's bytes are not signed, only its decoded parameters: a captured callback re-encoded
 * (`SM%31%323` for `SM123`, pairs reordered or repeated, `+` for `%20`) still verifies. So dedup keys
 * on a digest of the canonical signed string (`signedDigest`), on which every re-encoding lands.
 */
import { parse, stringify } from 'node:querystring';
import type { Duration } from '../../core/duration.js';
import { ConfigError, VerificationError } from '../../errors.js';
import {
  anyMatch,
  asBuffer,
  decodeSignature,
  type HmacAlgorithm,
  parseForm,
  parseJsonObject,
  type SecretInput,
  sha256Parts,
} from '../shared.js';
import type { AuthenticatingProvider, DeliveryInput, HeaderReader, Verified } from '../types.js';
import { checkAlgorithm, hmacMatches, noMatch, type SignatureSpec, signatureReader } from './bodyHmac.js';
import { assemble, type BaseDeclaration, readSecrets, type SecretSpec } from './define.js';

/** What the family's check hands the read step: the form (absent for JSON) and the canonical signed string. */
export interface UrlFormAuth {
  readonly params: URLSearchParams | undefined;
  /** The URL as signed (the spelling that matched) and the canonical parameters. */
  readonly signed: readonly [url: string, params: string];
}

export interface UrlFormDeclaration<E> extends BaseDeclaration<E, UrlFormAuth> {
  readonly secret?: SecretSpec | undefined;
  /** @default 'sha1' */
  readonly algorithm?: HmacAlgorithm | undefined;
  /** Reads the algorithm from the delivery (Twilio's `X-Twilio-Webhooks-Signature-Settings`). */
  readonly algorithmOf?: ((headers: HeaderReader, fallback: HmacAlgorithm) => HmacAlgorithm) | undefined;
  /** @example { header: 'x-twilio-signature', encoding: 'base64' } */
  readonly signature: SignatureSpec;
  /** Which URL is signed, for messages ("the URL <urlWhat>"). @example 'Twilio calls' */
  readonly urlWhat: string;
}

export interface UrlFormOptions {
  secret: SecretInput;
  /** The public URL the sender calls, exactly as configured (with its query string). */
  url?: string | undefined;
  retention?: Duration | undefined;
}

function portVariants(url: string): string[] {
  const match = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)(.*)$/i.exec(url);
  if (!match) return [url];
  const [, scheme = '', authority = '', rest = ''] = match;
  const at = authority.lastIndexOf('@');
  const userInfo = authority.slice(0, at + 1);
  const hostPort = authority.slice(at + 1);
  const colon = hostPort.indexOf(':', hostPort.lastIndexOf(']') + 1);
  const host = colon === -1 ? hostPort : hostPort.slice(0, colon);
  const withoutPort = scheme + userInfo + host + rest;
  const defaultPort = scheme.toLowerCase() === 'https://' ? ':443' : ':80';
  const withPort = colon === -1 ? scheme + userInfo + host + defaultPort + rest : url;
  return [...new Set([url, withoutPort, withPort])];
}

/** Re-encodes the query string the way Node's legacy `querystring` does, as some back ends signed it. */
function legacyQuery(url: string): string {
  const q = url.indexOf('?');
  if (q === -1 || q === url.length - 1) return url;
  return `${url.slice(0, q)}?${stringify(parse(url.slice(q + 1)))}`;
}

/**
 * The URLs Twilio's SDK accepts for one request, after the URL as received: with the default port
 * removed or added, then normalised by the URL parser, and with a legacy-encoded query string.
 */
function otherUrlVariants(url: string): string[] {
  const out = portVariants(url);
  let normalised: string | undefined;
  try {
    normalised = new URL(url).toString();
  } catch {
    normalised = undefined;
  }
  for (const u of portVariants(normalised ?? url)) out.push(u, legacyQuery(u));
  return [...new Set(out)].filter((u) => u !== url);
}

/** The canonical parameter string: each key in sorted order followed by its value(s). */
function signedParams(params: URLSearchParams): string {
  const grouped = new Map<string, string[]>();
  for (const [k, v] of params) {
    const list = grouped.get(k);
    if (list) list.push(v);
    else grouped.set(k, [v]);
  }
  let out = '';
  for (const k of [...grouped.keys()].sort()) {
    const values = grouped.get(k) ?? [];
    // Twilio's SDK de-duplicates and sorts repeated values of one key.
    const list = values.length > 1 ? [...new Set(values)].sort() : values;
    for (const v of list) out += k + v;
  }
  return out;
}

/**
 * The URL the sender called, from the configured public URL: the whole URL is signed, query
 * included, and JSON callbacks carry `bodySHA256` in the query, so a configured URL without a query
 * takes the query the request arrived with (a configured one with a query is used as it is).
 */
function withQueryOf(configured: string, requested: string | undefined): string {
  if (configured.includes('?') || requested === undefined) return configured;
  const at = requested.indexOf('?');
  return at === -1 ? configured : configured + requested.slice(at);
}

function bodySha256(url: string): string | undefined {
  const q = url.indexOf('?');
  if (q === -1) return undefined;
  const value = new URLSearchParams(url.slice(q + 1).split('#')[0]).get('bodySHA256');
  return value === null ? undefined : value;
}

/** The read step for the URL + form family: the form parameters (first value per name), or the JSON body. */
export function urlFormDescribe<E>(input: DeliveryInput, auth: UrlFormAuth): Verified<E> {
  // The key is a digest of exactly the string that was signed, not of the raw bytes: a re-encoded
  // replay verifies too and must land on the same key. Any two URL spellings that verify matched
  // one variant equal to the URL the sender signed, so they give one digest.
  const signedDigest = sha256Parts(auth.signed);
  if (auth.params === undefined) {
    return { event: parseJsonObject(input.rawBody) as E, dedup: 'body', signedDigest };
  }
  const event: Record<string, string> = {};
  for (const [k, v] of auth.params) if (!(k in event)) event[k] = v;
  return { event: event as E, dedup: 'body', signedDigest };
}

/**
 * A URL + form HMAC provider factory from its declaration.
 *
 * @example
 * const factory = urlFormHmac({
 *   name: 'signalwire',
 *   retention: '1d',
 *   signature: { header: 'x-signalwire-signature', encoding: 'base64' },
 *   urlWhat: 'SignalWire calls',
 * });
 */
export function urlFormHmac<E>(
  d: UrlFormDeclaration<E>,
): (options: UrlFormOptions) => AuthenticatingProvider<E> {
  const label = d.label ?? d.name;
  const fallback = checkAlgorithm(d.algorithm ?? 'sha1', label);
  const read = signatureReader({ encoding: 'base64', ...d.signature });
  const describe = d.describe ?? urlFormDescribe<E>;

  return (options) => {
    const keys = readSecrets(label, options.secret, d.secret);
    const configured = options.url;
    if (configured !== undefined && (typeof configured !== 'string' || !/^https?:\/\//.test(configured))) {
      throw new ConfigError(
        'invalid_option',
        `onceonly: ${label} url must be the full http(s) URL ${d.urlWhat}`,
      );
    }

    /**
     * The HMAC over the URL and the sorted form parameters (form callbacks), or over the URL with
     * `bodySHA256` plus the body's hash (JSON). The URL as received is tried first and the other
     * spellings the sender's SDK accepts only when it fails: which spelling matched is no secret
     * (the URL is the caller's), and each try compares every key and candidate in constant time.
     */
    function authenticate({ rawBody, headers, url }: DeliveryInput): UrlFormAuth {
      const candidates = read(headers);
      const algorithm = d.algorithmOf ? d.algorithmOf(headers, fallback) : fallback;
      const signedUrl = configured === undefined ? url : withQueryOf(configured, url);
      if (signedUrl === undefined) {
        throw new ConfigError(
          'invalid_option',
          `onceonly: ${label} signs the URL ${d.urlWhat}; set url, or pass url to receive()`,
        );
      }
      const body = asBuffer(rawBody);
      const bodyHash = bodySha256(signedUrl);
      const params = bodyHash === undefined ? parseForm(body) : undefined;
      const suffix = params ? signedParams(params) : '';
      let matched: string | undefined;
      if (hmacMatches(algorithm, keys, [signedUrl, suffix], candidates)) matched = signedUrl;
      else {
        for (const variant of otherUrlVariants(signedUrl)) {
          if (hmacMatches(algorithm, keys, [variant, suffix], candidates)) {
            matched = variant;
            break;
          }
        }
      }
      if (matched === undefined) throw noMatch(label);

      if (bodyHash !== undefined) {
        // The URL (with bodySHA256) is signed; the body is bound to it by its hash.
        const actual = Buffer.from(sha256Parts([body]), 'hex');
        const claimed = decodeSignature(bodyHash.toLowerCase(), 'hex');
        if (!claimed || !anyMatch([actual], [claimed])) {
          throw new VerificationError(
            'invalid_signature',
            "onceonly: the body's SHA-256 does not match the signed bodySHA256 parameter; the body was changed or re-serialised",
          );
        }
      }
      return { params, signed: [matched, suffix] };
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
