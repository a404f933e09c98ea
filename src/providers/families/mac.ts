/**
 * HMAC (RFC 2104) on the one-shot hash (`crypto.hash`, Node 20.12+): H((K ^ opad) || H((K ^ ipad) || m)).
 *
 * `createHmac` costs about 6 µs per call before it hashes a byte on Node 20 (OpenSSL 3 fetches and
 * sets up the MAC every time), more than hashing a 2 KiB body; two one-shot hashes over the padded
 * key cost well under that. The pads are derived once per key and algorithm, the message is copied
 * after the inner pad into one reusable buffer, and the digest lands in a reusable buffer the caller
 * compares at once (with `timingSafeEqual`, as before). Where the one-shot hash is missing, or
 * disagrees with `createHmac` on a known vector at load (another runtime's `node:crypto`), and for
 * messages over 64 KiB (where the fixed cost no longer matters and the copy would), `createHmac`
 * computes it as before.
 */
import { createHash, createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { oneShotHash as oneShot } from '../../core/crypto.js';
import type { HmacAlgorithm } from '../shared.js';

/** Block and digest sizes in bytes. */
const SIZES: Record<HmacAlgorithm, { block: number; digest: number }> = {
  sha1: { block: 64, digest: 20 },
  sha256: { block: 64, digest: 32 },
  sha512: { block: 128, digest: 64 },
};

/** The largest message the one-shot path copies; longer ones go to `createHmac`. */
const MAX_COPIED = 65_536;
const LARGEST_BLOCK = 128;

interface Pads {
  /** K0 ^ ipad. */
  readonly inner: Buffer;
  /** K0 ^ opad, then room for the inner digest: the outer hash's whole input. */
  readonly outer: Buffer;
  /** Where the MAC is written (the caller reads it before the next call). */
  readonly out: Buffer;
}

const padsOf = new WeakMap<KeyObject, Partial<Record<HmacAlgorithm, Pads>>>();
let message = Buffer.allocUnsafe(4_096);

function derive(algorithm: HmacAlgorithm, key: KeyObject): Pads {
  const { block, digest } = SIZES[algorithm];
  let k = key.export();
  // A key longer than the block is hashed first (RFC 2104, section 2).
  if (k.length > block) k = createHash(algorithm).update(k).digest();
  const inner = Buffer.alloc(block, 0x36);
  const outer = Buffer.alloc(block + digest, 0x5c);
  for (let i = 0; i < k.length; i++) {
    inner[i]! ^= k[i]!;
    outer[i]! ^= k[i]!;
  }
  return { inner, outer, out: Buffer.alloc(digest) };
}

function padsFor(algorithm: HmacAlgorithm, key: KeyObject): Pads {
  let byAlgorithm = padsOf.get(key);
  if (byAlgorithm === undefined) {
    byAlgorithm = {};
    padsOf.set(key, byAlgorithm);
  }
  let pads = byAlgorithm[algorithm];
  if (pads === undefined) {
    pads = derive(algorithm, key);
    byAlgorithm[algorithm] = pads;
  }
  return pads;
}

/** The MAC by two one-shot hashes, or undefined when the message is too long to copy. */
function fast(
  algorithm: HmacAlgorithm,
  key: KeyObject,
  parts: readonly (Uint8Array | string)[],
): Buffer | undefined {
  const pads = padsFor(algorithm, key);
  const block = pads.inner.length;
  // Room for the worst case: a string's UTF-8 is at most 3 bytes per UTF-16 unit.
  let most = block;
  for (let p = 0; p < parts.length; p++) {
    const part = parts[p]!;
    if (typeof part === 'string') most += 3 * part.length;
    // Anything else that is not a byte array (a DataView, an ArrayBuffer, a wider typed array, from
    // a JavaScript caller past the types) goes to createHmac, which hashes or refuses it as before:
    // set() would copy nothing, or the wrong bytes.
    else if (part instanceof Uint8Array) most += part.byteLength;
    else return undefined;
  }
  if (most > block + MAX_COPIED) return undefined;
  if (most > message.length) {
    message = Buffer.allocUnsafe(Math.min(Math.max(most, 2 * message.length), LARGEST_BLOCK + MAX_COPIED));
  }
  const m = message;
  pads.inner.copy(m, 0);
  let at = block;
  for (let p = 0; p < parts.length; p++) {
    const part = parts[p]!;
    if (typeof part === 'string') at += m.write(part, at, 'utf8');
    else {
      m.set(part, at);
      at += part.byteLength;
    }
  }
  // latin1: one char per byte, so the digest's bytes go back into a buffer unchanged.
  pads.outer.write(oneShot!(algorithm, m.subarray(0, at), 'latin1'), block, 'latin1');
  // Neither the key's inner pad (the key, to anyone who reads it) nor the body stays behind.
  m.fill(0, 0, at);
  pads.out.write(oneShot!(algorithm, pads.outer, 'latin1'), 0, 'latin1');
  return pads.out;
}

/** `createHmac` over the parts, as strings and bytes are fed to `update` (strings as UTF-8). */
function slow(algorithm: HmacAlgorithm, key: KeyObject, parts: readonly (Uint8Array | string)[]): Buffer {
  const mac = createHmac(algorithm, key);
  for (let p = 0; p < parts.length; p++) mac.update(parts[p]!);
  return mac.digest();
}

/** Whether the one-shot path gives `createHmac`'s answer here (RFC 4231 test case 2, and a long key). */
function agrees(): boolean {
  if (typeof oneShot !== 'function') return false;
  try {
    for (const algorithm of Object.keys(SIZES) as HmacAlgorithm[]) {
      for (const secret of ['Jefe', 'k'.repeat(200)]) {
        const key = createSecretKey(Buffer.from(secret));
        const parts = ['what do ya want ', Buffer.from('for nothing?'), 'é'];
        const mine = fast(algorithm, key, parts);
        if (!mine?.equals(slow(algorithm, key, parts))) return false;
      }
    }
    return true;
  } catch {
    return false;
  }
}

const useFast = agrees();

/**
 * The HMAC of the parts (strings as UTF-8) under a secret key. The returned buffer may be reused by
 * the next call: compare or copy it before calling again.
 */
export function macOf(
  algorithm: HmacAlgorithm,
  key: KeyObject,
  parts: readonly (Uint8Array | string)[],
): Buffer {
  return (
    (useFast && key.type === 'secret' ? fast(algorithm, key, parts) : undefined) ??
    slow(algorithm, key, parts)
  );
}

/** Which path computes MACs in this process (for tests). */
export const macPath: 'one-shot' | 'createHmac' = useFast ? 'one-shot' : 'createHmac';
