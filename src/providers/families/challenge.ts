/**
 * What the verification handshakes that are plain echoes share (Meta's `hub.challenge` GET,
 * Dropbox's `challenge` GET, Okta's verification header, Twitch's challenge): reading the query
 * string, echoing a challenge only in a form that cannot become markup or another header, and
 * comparing a configured token in constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { VerificationError } from '../../errors.js';
import type { HandshakeRequest } from '../types.js';

/** The request's query parameters; empty when the receiver was given no URL. */
export function queryOf(request: HandshakeRequest): URLSearchParams {
  const url = request.url;
  if (url === undefined) return new URLSearchParams();
  const at = url.indexOf('?');
  return new URLSearchParams(at === -1 ? '' : url.slice(at + 1));
}

// What senders send as challenges (digits, base64url or hex tokens, UUIDs): echoed as they are.
// Anything else (markup, whitespace, a very long value) is refused rather than reflected.
const CHALLENGE = /^[A-Za-z0-9._~+/=-]{1,512}$/;

/** The challenge, checked to be a plain token; `malformed_header` naming `where` otherwise. */
export function plainChallenge(value: string | null | undefined, where: string): string {
  if (typeof value !== 'string' || !CHALLENGE.test(value)) {
    throw new VerificationError(
      'malformed_header',
      `onceonly: the ${where} is missing or not a plain token (letters, digits, ._~+/=-, at most 512)`,
    );
  }
  return value;
}

/**
 * True when `offered` equals `expected`, compared in constant time over SHA-256 digests, so the
 * time taken tells nothing, not even the length of the expected token.
 */
export function tokenEquals(offered: string, expected: string): boolean {
  const a = createHash('sha256').update(offered).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** A challenge echoed as `text/plain`, never sniffed as anything else. */
export function echo(challenge: string): {
  body: string;
  headers: Record<string, string>;
} {
  return {
    body: challenge,
    headers: { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' },
  };
}
