import { parse, stringify } from 'node:querystring';
import { ConfigError, VerificationError } from '../errors.js';
import type { Duration } from '../lease/duration.js';
import {
  anyMatch,
  asBuffer,
  decodeSignature,
  type HmacAlgorithm,
  header,
  hmacEach,
  offeredSignatures,
  parseForm,
  parseJsonObject,
  refusingLookalikes,
  requireHeader,
  requireMatch,
  retentionMs,
  type SecretInput,
  secretKeys,
  sha256Parts,
} from './shared.js';
import type { AuthenticatingProvider, DeliveryInput, HeaderReader, Verified } from './types.js';

/** A Twilio callback: the form fields (`CallSid`, `MessageStatus`...), or the JSON body when it has one. */
export type TwilioEvent = Record<string, unknown>;

export interface TwilioOptions {
  /**
   * The account's Auth Token (Console → Account info); an array while rotating to a secondary token.
   * @example process.env.TWILIO_AUTH_TOKEN!
   */
  secret: SecretInput;
  /**
   * The public URL Twilio calls, exactly as configured (with its query string). Twilio signs it,
   * and behind a proxy the URL the request arrives at often differs. When unset, the delivery's
   * `url` is used; both are also tried with the default port added and removed, normalised
   * and with a legacy-encoded query, as Twilio's SDK does.
   * @default the delivery's url
   * @example 'https://example.com/twilio/status'
   */
  url?: string;
  /**
   * How long a completed callback's digest is remembered. Twilio retries only when configured to,
   * within seconds; a captured request verifies forever (no timestamp), so this is the replay window.
   * @default '1d'
   * @example '7d'
   */
  retention?: Duration;
}

const HEADER = 'x-twilio-signature';

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
 * The URLs Twilio's SDK accepts for one request: as received, with the default port removed or
 * added, then normalised by the URL parser, and with a legacy-encoded query string.
 */
function urlVariants(url: string): string[] {
  const out = portVariants(url);
  let normalised: string | undefined;
  try {
    normalised = new URL(url).toString();
  } catch {
    normalised = undefined;
  }
  for (const u of portVariants(normalised ?? url)) out.push(u, legacyQuery(u));
  return [...new Set(out)];
}

/** Twilio's signed string: URL, then each form key in sorted order followed by its value(s). */
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
 * The URL Twilio called, from the configured public URL: Twilio signs the whole URL, query included,
 * and adds `bodySHA256` to the query of every JSON callback, so a configured URL without a query
 * takes the query the request arrived with (a configured one with a query is used as it is).
 */
function withQueryOf(configured: string, requested: string | undefined): string {
  if (configured.includes('?') || requested === undefined) return configured;
  const at = requested.indexOf('?');
  return at === -1 ? configured : configured + requested.slice(at);
}

function algorithmOf(headers: HeaderReader): HmacAlgorithm {
  const settings = header(headers, 'x-twilio-webhooks-signature-settings');
  if (settings === undefined) return 'sha1';
  for (const part of settings.split(',')) {
    const at = part.indexOf('=');
    if (at !== -1 && part.slice(0, at).trim() === 'algorithm') {
      const name = part
        .slice(at + 1)
        .trim()
        .toUpperCase();
      if (name === '' || name === 'HMAC_SHA1') return 'sha1';
      if (name === 'HMAC_SHA256') return 'sha256';
      throw new VerificationError(
        'malformed_header',
        'onceonly: x-twilio-webhooks-signature-settings names an algorithm onceonly does not support',
      );
    }
  }
  return 'sha1';
}

/**
 * Twilio: `X-Twilio-Signature: <base64>` over the URL followed by the sorted form parameters,
 * HMAC-SHA1 with the Auth Token (HMAC-SHA256 when `X-Twilio-Webhooks-Signature-Settings` says so).
 * JSON bodies are covered by the `bodySHA256` query parameter, whose value must equal the body's
 * SHA-256. Callbacks carry no id unique to one callback, so dedup keys on a digest of the body.
 *
 * @example
 * createReceiver({ provider: twilio({ secret: process.env.TWILIO_AUTH_TOKEN!, url: 'https://example.com/twilio/status' }), store, handler });
 */
export function twilio<E = TwilioEvent>(options: TwilioOptions): AuthenticatingProvider<E> {
  const keys = secretKeys(
    'twilio',
    options.secret,
    refusingLookalikes(
      'twilio',
      [
        ['AC', 'the Account SID'],
        ['SK', 'an API key SID'],
      ],
      'the Auth Token from Console → Account info',
    ),
  );
  const configured = options.url;
  if (configured !== undefined && (typeof configured !== 'string' || !/^https?:\/\//.test(configured))) {
    throw new ConfigError('invalid_option', 'onceonly: twilio url must be the full http(s) URL Twilio calls');
  }
  const retention = retentionMs(options.retention, '1d');

  /**
   * The signature checks over the URL and the sorted form parameters (form callbacks), or over the
   * URL with `bodySHA256` plus the body's hash (JSON). Form parameters are signed material, so they
   * are parsed here; a JSON body is not. Returns the parameters of a form callback for `verify`.
   * Shared by `authenticate` and `verify`.
   */
  function authenticate({ rawBody, headers, url }: DeliveryInput): URLSearchParams | undefined {
    const candidates = offeredSignatures(HEADER, [requireHeader(headers, HEADER)], 'base64');
    const algorithm = algorithmOf(headers);
    const signedUrl = configured === undefined ? url : withQueryOf(configured, url);
    if (signedUrl === undefined) {
      throw new ConfigError(
        'invalid_option',
        'onceonly: twilio signs the URL it calls; set url, or pass url to receive()',
      );
    }
    const body = asBuffer(rawBody);
    const bodyHash = bodySha256(signedUrl);
    const params = bodyHash === undefined ? parseForm(body) : undefined;
    const suffix = params ? signedParams(params) : '';
    const expected = urlVariants(signedUrl).flatMap((u) => hmacEach(algorithm, keys, [u, suffix]));
    requireMatch('twilio', expected, candidates);

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
    return params;
  }

  return {
    name: 'twilio',
    retentionMs: retention,
    authenticate(input: DeliveryInput): void {
      authenticate(input);
    },
    verify(input: DeliveryInput): Verified<E> {
      const params = authenticate(input);
      if (params === undefined) return { event: parseJsonObject(input.rawBody) as E, dedup: 'body' };
      const event: Record<string, string> = {};
      for (const [k, v] of params) if (!(k in event)) event[k] = v;
      return { event: event as E, dedup: 'body' };
    },
  };
}

function bodySha256(url: string): string | undefined {
  const q = url.indexOf('?');
  if (q === -1) return undefined;
  const value = new URLSearchParams(url.slice(q + 1).split('#')[0]).get('bodySHA256');
  return value === null ? undefined : value;
}
