/**
 * What the timestamped senders' rows share: the id and time forms they write, and the two header
 * layouts several of them sign with (`t=..,v1=..` over `t.body`; Slack's and Zoom's `v0=` over
 * `v0:t:body`).
 */
import { randomBytes } from 'node:crypto';
import { hmac } from '../sign.js';
import type { SignContext, Signed } from '../types.js';

/** `length` characters drawn from `alphabet`. */
export function randomFrom(alphabet: string, length: number): string {
  let out = '';
  for (const byte of randomBytes(length)) out += alphabet[byte % alphabet.length];
  return out;
}

/** Letters and digits, both cases: the tails of most ids. */
export const randomAlnum = (length: number): string =>
  randomFrom('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789', length);

/** A number of `length` digits (no leading zero), as text. */
export const randomDigits = (length: number): string =>
  randomFrom('123456789', 1) + randomFrom('0123456789', length - 1);

/** A ULID in lower-case Crockford base32, as Paddle writes its ids (`evt_01h...`). */
export const ulid = (): string => `01${randomFrom('0123456789abcdefghjkmnpqrstvwxyz', 24)}`;

/** `at` in RFC 3339 to the second, in UTC: `2026-11-30T05:00:00Z`. */
export const isoSeconds = (at: Date): string => at.toISOString().replace(/\.\d{3}Z$/, 'Z');

/** `at` in RFC 3339 to the second at UTC-8, as Box writes its times: `2026-11-29T21:00:00-08:00`. */
export const pacific = (at: Date): string =>
  new Date(at.getTime() - 8 * 3_600_000).toISOString().replace(/\.\d{3}Z$/, '-08:00');

/**
 * `<header>: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">` under the secret's text (Calendly,
 * Mux, Persona), with the sender's other headers.
 */
export const tV1 =
  (header: string, headers: Record<string, string> = {}) =>
  ({ secret, seconds, body }: SignContext): Signed => ({
    headers: {
      ...headers,
      [header]: `t=${seconds},v1=${hmac('sha256', secret, [`${seconds}.`, body], 'hex')}`,
    },
  });

/** `v0=<hex HMAC-SHA256 of "v0:<seconds>:body">` under the secret's text (Slack, Zoom). */
export const v0 = (secret: string, seconds: string, body: string | Uint8Array): string =>
  `v0=${hmac('sha256', secret, [`v0:${seconds}:`, body], 'hex')}`;
