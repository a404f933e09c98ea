import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A random 128-bit owner token, hex encoded. */
export function newToken(): string {
  return randomBytes(16).toString('hex');
}

/** SHA-256 of the bytes, hex encoded: the fingerprint of a delivery's raw body. */
export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Constant-time equality of two byte strings; unequal lengths are unequal without a timing leak of content. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
