/**
 * Compact JWS (JWT) reading shared by the families that accept one: the asymmetric family (Plaid's
 * ES256) and the body-HMAC family (Netlify's HS256). Parsing, the `alg` allow-list and the claim
 * binding the body live here once; each family checks the signature with its own keys.
 */
import { VerificationError } from '../../errors.js';
import { anyMatch, asBuffer, decodeStrict, parseJsonObjectText, sha256Parts } from '../shared.js';

export interface CompactJws {
  /** The protected header, parsed. */
  readonly head: Record<string, unknown>;
  /** The payload's claims, parsed: trusted only once the signature checks out. */
  readonly claims: Record<string, unknown>;
  readonly alg: string;
  /** What the signature covers: `base64url(header).base64url(payload)` as sent. */
  readonly data: Buffer;
  readonly signature: Buffer;
}

/**
 * Reads a compact JWS from a header value: three base64url parts, JSON header and payload, an `alg`
 * from `algorithms` (never `none`, never one the sender does not use), no `crit`. Throws
 * `malformed_header` otherwise.
 */
export function readCompactJws(
  token: string,
  headerName: string,
  label: string,
  algorithms: readonly string[],
): CompactJws {
  const malformed = (why: string) =>
    new VerificationError(
      'malformed_header',
      `onceonly: the ${headerName} header is not a compact JWS: ${why}`,
    );
  const dots = token.split('.');
  if (dots.length !== 3) throw malformed('it needs three dot-separated parts');
  const [h, p, s] = dots as [string, string, string];
  const headerBytes = decodeStrict(h, 'base64url');
  const payloadBytes = decodeStrict(p, 'base64url');
  const signature = decodeStrict(s, 'base64url');
  if (!headerBytes || !payloadBytes || !signature) throw malformed('a part is not base64url');
  let head: Record<string, unknown>;
  let claims: Record<string, unknown>;
  try {
    head = parseJsonObjectText(headerBytes.toString('utf8'), 'the JWS header');
    claims = parseJsonObjectText(payloadBytes.toString('utf8'), 'the JWS payload');
  } catch {
    throw malformed('its header or payload is not a JSON object');
  }
  const alg = head.alg;
  if (typeof alg !== 'string' || !algorithms.includes(alg)) {
    throw malformed(`alg ${JSON.stringify(alg)} is not one ${label} signs with`);
  }
  if (head.crit !== undefined) throw malformed('it names critical extensions');
  return { head, claims, alg, data: Buffer.from(`${h}.${p}`, 'ascii'), signature };
}

/** Throws `invalid_signature` unless the claim holds the hex SHA-256 of the raw body. */
export function requireBodyHash(
  claims: Record<string, unknown>,
  claim: string,
  rawBody: Uint8Array,
  label: string,
): void {
  const claimed = claims[claim];
  const actual = Buffer.from(sha256Parts([asBuffer(rawBody)]), 'hex');
  const offered = typeof claimed === 'string' ? decodeStrict(claimed.toLowerCase(), 'hex') : undefined;
  if (!offered || !anyMatch([actual], [offered])) {
    throw new VerificationError(
      'invalid_signature',
      `onceonly: the body's SHA-256 does not match the ${label} JWS's ${claim}; the body was changed or re-serialised`,
    );
  }
}

/**
 * Refuses a JWS past its `exp` (`timestamp_too_old`) or before its `nbf` (`timestamp_too_new`), as a
 * standard JWT check does (RFC 7519, 4.1.4 and 4.1.5), with `leewayMs` of clock skew either way
 * (the family's tolerance). Either claim present but not a finite number is `malformed_header`: an
 * expiry the sender signed must never be waved through by a type it did not expect. Call it only
 * once the signature checked out.
 */
export function checkValidityClaims(
  claims: Record<string, unknown>,
  receivedAt: Date,
  leewayMs: number,
  label: string,
): void {
  const now = receivedAt.getTime();
  for (const name of ['exp', 'nbf'] as const) {
    const value = claims[name];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw new VerificationError(
        'malformed_header',
        `onceonly: the ${label} JWS's ${name} claim is not a number of seconds`,
      );
    }
    const ms = value * 1000;
    if (name === 'exp' && now - ms > leewayMs) {
      throw new VerificationError(
        'timestamp_too_old',
        `onceonly: the ${label} JWS expired ${Math.round((now - ms) / 1000)} s ago, past the ${leewayMs / 1000} s leeway (a replay)`,
      );
    }
    if (name === 'nbf' && ms - now > leewayMs) {
      throw new VerificationError(
        'timestamp_too_new',
        `onceonly: the ${label} JWS is not valid for another ${Math.round((ms - now) / 1000)} s, past the ${leewayMs / 1000} s leeway (check the server clock)`,
      );
    }
  }
}
