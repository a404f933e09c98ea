import * as nodeCrypto from 'node:crypto';
import { createHash, randomFillSync, timingSafeEqual } from 'node:crypto';

/**
 * One-shot hashing (`crypto.hash`, Node 20.12+), or undefined where the runtime lacks it: it skips
 * the Hash object, about a quarter less per 2 KiB body (and far less than an HMAC object).
 */
export const oneShotHash = (
  nodeCrypto as unknown as {
    hash?: (algorithm: string, data: Uint8Array | string, encoding: 'hex' | 'latin1') => string;
  }
).hash;

// Owner tokens (128 random bits from the CSPRNG, hex) cut from a pooled buffer: one getrandom call
// per 256 tokens instead of one per claim, on the hottest path of every store. Each token's bytes
// are used once, and the pool is refilled before any byte could be used twice. Each token is a
// string of its own (toString per token): a slice of one hex string per batch would be cheaper to
// make, but V8 keeps a slice's whole parent alive, so every lease still held would hold 8 KB.
const pool = Buffer.alloc(16 * 256);
let pooled = pool.length;

/** A random 128-bit owner token, hex encoded. */
export function newToken(): string {
  if (pooled === pool.length) {
    randomFillSync(pool);
    pooled = 0;
  }
  pooled += 16;
  return pool.toString('hex', pooled - 16, pooled);
}

/** SHA-256 of the bytes, hex encoded: the fingerprint of a delivery's raw body. */
export function sha256Hex(data: Uint8Array | string): string {
  return oneShotHash ? oneShotHash('sha256', data, 'hex') : createHash('sha256').update(data).digest('hex');
}

/** Constant-time equality of two byte strings; unequal lengths are unequal without a timing leak of content. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
