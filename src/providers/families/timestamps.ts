/**
 * Delivery timestamps: integer (s or ms) and RFC 3339 headers parsed strictly and fast (they run on
 * every delivery), and the tolerance window checked in both directions.
 */
import { type Duration, parseDuration } from '../../core/duration.js';
import { ConfigError, VerificationError } from '../../errors.js';

/** The default timestamp tolerance, applied in both directions. */
export const DEFAULT_TOLERANCE_MS = 5 * 60_000;

/** True for 1 to `max` ASCII digits (a character loop: this runs on every delivery). */
function isDigits(value: string, max: number): boolean {
  if (value.length === 0 || value.length > max) return false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** Parses an integer timestamp header (seconds or ms) into ms since the epoch. */
export function parseTimestamp(name: string, value: string, unit: 's' | 'ms' = 's'): number {
  if (!isDigits(value, 16)) {
    throw new VerificationError(
      'malformed_header',
      `onceonly: the ${name} header is not an integer timestamp`,
    );
  }
  return Number(value) * (unit === 's' ? 1000 : 1);
}

/** The value of `count` ASCII digits at `at`, or -1 when one is not a digit. */
function digitsAt(value: string, at: number, count: number): number {
  let n = 0;
  for (let i = at; i < at + count; i++) {
    const c = value.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    n = n * 10 + c;
  }
  return n;
}

/**
 * Parses an RFC 3339 timestamp header (`2026-11-30T05:00:00.123456789Z`, or with a `+hh:mm` offset)
 * into ms since the epoch; `malformed_header` for anything else. Digits past milliseconds are
 * dropped (JavaScript dates hold ms). Read by position, without a RegExp or Date.parse: this runs on
 * every delivery.
 */
export function parseIsoTimestamp(name: string, value: string): number {
  const ms = isoMs(value);
  if (Number.isNaN(ms)) {
    throw new VerificationError(
      'malformed_header',
      `onceonly: the ${name} header is not an RFC 3339 timestamp`,
    );
  }
  return ms;
}

/** The character code at `at` is `code`. */
function charIs(v: string, at: number, code: number): boolean {
  return v.charCodeAt(at) === code;
}

/**
 * Days from 1970-01-01 to the given date in the proleptic Gregorian calendar (H. Hinnant's
 * days_from_civil), linear in `day` as Date.UTC is, so day 31 of a short month rolls over as it did.
 * Integer arithmetic in JavaScript: Date.UTC is a call into C++ on every delivery.
 */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

function isoMs(v: string): number {
  if (v.length < 20 || v.length > 40) return Number.NaN;
  // '-' 45, ':' 58, 'T' 84, '.' 46, 'Z' 90, '+' 43.
  if (
    !charIs(v, 4, 45) ||
    !charIs(v, 7, 45) ||
    !charIs(v, 10, 84) ||
    !charIs(v, 13, 58) ||
    !charIs(v, 16, 58)
  )
    return Number.NaN;
  const year = digitsAt(v, 0, 4);
  const month = digitsAt(v, 5, 2);
  const day = digitsAt(v, 8, 2);
  const hour = digitsAt(v, 11, 2);
  const minute = digitsAt(v, 14, 2);
  const second = digitsAt(v, 17, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23) return Number.NaN;
  if (minute < 0 || minute > 59 || second < 0 || second > 60) return Number.NaN;
  let at = 19;
  let fraction = 0;
  if (charIs(v, at, 46)) {
    const from = ++at;
    while (at < v.length && v.charCodeAt(at) >= 48 && v.charCodeAt(at) <= 57) at++;
    const count = at - from;
    if (count < 1 || count > 9) return Number.NaN;
    // Milliseconds: the first three digits, as if padded with zeros.
    for (let i = 0; i < 3; i++) fraction = fraction * 10 + (i < count ? v.charCodeAt(from + i) - 48 : 0);
  }
  let offset = 0;
  const sign = v.charCodeAt(at);
  if (sign === 90 && at === v.length - 1) offset = 0;
  else if ((sign === 43 || sign === 45) && at === v.length - 6 && charIs(v, at + 3, 58)) {
    const oh = digitsAt(v, at + 1, 2);
    const om = digitsAt(v, at + 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return Number.NaN;
    offset = (sign === 43 ? 1 : -1) * (oh * 60 + om) * 60_000;
  } else return Number.NaN;
  const days = daysFromCivil(year, month, day);
  return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + fraction - offset;
}

/** Rejects a timestamp outside ±`toleranceMs` of `receivedAt`, saying which side it fell off. */
export function checkTolerance(timestampMs: number, receivedAt: Date, toleranceMs: number): void {
  const skew = receivedAt.getTime() - timestampMs;
  // An invalid receivedAt would make every comparison false and wave any timestamp through.
  if (Number.isNaN(skew)) {
    throw new ConfigError(
      'invalid_option',
      'onceonly: receivedAt is not a valid Date; pass the time the delivery arrived (or leave it out for now)',
    );
  }
  if (skew > toleranceMs) {
    throw new VerificationError(
      'timestamp_too_old',
      `onceonly: the delivery's timestamp is ${Math.round(skew / 1000)} s old, over the ${toleranceMs / 1000} s tolerance (a replay, or a queued delivery: pass receivedAt)`,
    );
  }
  if (-skew > toleranceMs) {
    throw new VerificationError(
      'timestamp_too_new',
      `onceonly: the delivery's timestamp is ${Math.round(-skew / 1000)} s in the future, over the ${toleranceMs / 1000} s tolerance (check the server clock)`,
    );
  }
}

/** A tolerance option parsed once at construction. */
export function toleranceMs(value: Duration | undefined): number {
  return value === undefined ? DEFAULT_TOLERANCE_MS : parseDuration(value, 'tolerance');
}
