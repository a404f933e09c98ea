/**
 * The memory store's records: a lease or a released or run-out record is an {@link Entry}; a
 * completed key is packed into one flat one-byte string (about 60 bytes instead of an object with
 * three strings), since completed keys are the bulk of a busy store.
 */
import { sameFingerprint } from '../../core/types.js';

/** A lease, or a released or run-out record: a completed one is packed (see {@link pack}). */
export interface Entry {
  /** Owner token; '' once released (no owner). Kept after confirm so a repeated confirm by the same owner is recognised. */
  token: string;
  attempt: number;
  fingerprint: string | undefined;
  expiresAt: number;
  updatedAt: number;
  /** How long the record stays takeable after `expiresAt` (processing entries only). */
  graceMs: number;
  /** Durable steps' results by name (processing and released records only: completion drops them). */
  steps?: Map<string, string> | undefined;
}

// Packing of completed entries: one flat one-byte string of
//   expiresAt (6 bytes, 48-bit ms) · updatedAt (6) · attempt (4) · token field · fingerprint field
// where a field is 0x01 + length + the bytes of a lowercase hex value (half its size), 0x02 + 4-byte
// length + UTF-8 text otherwise (any length a string can have), or 0x00 when absent. Built through a Buffer so the string is flat
// (concatenation would leave a rope of many small strings).
// All packing goes through one buffer, reused (pack is synchronous): no buffer per completion.
let packing = Buffer.allocUnsafe(512);

/** Makes room in the packing buffer for `size` bytes, keeping the first `kept`. */
function packingRoom(size: number, kept: number): Buffer {
  if (size > packing.length) {
    const larger = Buffer.allocUnsafe(Math.max(size, 2 * packing.length));
    packing.copy(larger, 0, 0, kept);
    packing = larger;
  }
  return packing;
}

/**
 * Writes a field at `at`; returns the offset after it. Lowercase hex of 1 to 255 bytes goes as its
 * bytes (checked digit by digit as it is written), anything else as UTF-8 text.
 */
function writeField(at: number, value: string | undefined): number {
  if (value === undefined) {
    packingRoom(at + 1, at)[at] = 0;
    return at + 1;
  }
  const n = value.length;
  if (n > 0 && n <= 510 && (n & 1) === 0) {
    const buf = packingRoom(at + 2 + n / 2, at);
    let j = at + 2;
    let i = 0;
    for (; i < n; i += 2, j++) {
      const hi = hexDigit(value.charCodeAt(i));
      const lo = hexDigit(value.charCodeAt(i + 1));
      if (hi < 0 || lo < 0) break;
      buf[j] = (hi << 4) | lo;
    }
    if (i === n) {
      buf[at] = 1;
      buf[at + 1] = n / 2;
      return j;
    }
  }
  const buf = packingRoom(at + 5 + Buffer.byteLength(value, 'utf8'), at);
  buf[at] = 2;
  const written = buf.write(value, at + 5, 'utf8');
  buf.writeUInt32BE(written, at + 1);
  return at + 5 + written;
}

/** A completed record of the entry, ending at `expiresAt`, written at `updatedAt`. */
export function pack(entry: Entry, expiresAt: number, updatedAt: number): string {
  const buf = packingRoom(16, 0);
  buf.writeUIntBE(expiresAt, 0, 6);
  buf.writeUIntBE(updatedAt, 6, 6);
  buf.writeUInt32BE(entry.attempt, 12);
  const end = writeField(writeField(16, entry.token), entry.fingerprint);
  return packing.toString('latin1', 0, end);
}

/**
 * Whether a packed entry's fingerprint is the same as `offered` (true when either has none), read in
 * place: a duplicate delivery, the commonest claim of a completed key, unpacks nothing.
 */
export function packedFingerprintIs(packed: string, offered: string | undefined): boolean {
  if (offered === undefined) return true;
  // Skip the token field.
  let at = 16;
  const kind = packed.charCodeAt(at);
  if (kind === 1) at += 2 + packed.charCodeAt(at + 1);
  else if (kind === 2) return sameFingerprint(unpack(packed).fingerprint, offered);
  else at += 1;
  const fp = packed.charCodeAt(at);
  if (fp === 0) return true;
  if (fp !== 1) return sameFingerprint(unpack(packed).fingerprint, offered);
  // Stored as lowercase hex, one byte per two digits: compare digit pairs against the bytes.
  const n = packed.charCodeAt(at + 1);
  if (offered.length !== 2 * n) return false;
  for (let i = 0; i < n; i++) {
    const hi = hexDigit(offered.charCodeAt(2 * i));
    const lo = hexDigit(offered.charCodeAt(2 * i + 1));
    if (hi < 0 || lo < 0 || ((hi << 4) | lo) !== packed.charCodeAt(at + 2 + i)) return false;
  }
  return true;
}

/** The value of a lowercase hex digit's char code, or -1 (uppercase is another string, so unequal). */
function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

/** When a packed record's retention ends, in ms since the epoch. */
export function expiresAtOf(packed: string): number {
  let value = 0;
  for (let i = 0; i < 6; i++) value = value * 256 + packed.charCodeAt(i);
  return value;
}

function readField(buf: Buffer, at: number): [string | undefined, number] {
  const kind = buf[at];
  if (kind === 0) return [undefined, at + 1];
  if (kind === 1) {
    const n = buf[at + 1]!;
    return [buf.toString('hex', at + 2, at + 2 + n), at + 2 + n];
  }
  const n = buf.readUInt32BE(at + 1);
  return [buf.toString('utf8', at + 5, at + 5 + n), at + 5 + n];
}

export function unpack(packed: string): Entry {
  const buf = Buffer.from(packed, 'latin1');
  const [token, next] = readField(buf, 16);
  const [fingerprint] = readField(buf, next);
  return {
    expiresAt: buf.readUIntBE(0, 6),
    updatedAt: buf.readUIntBE(6, 6),
    attempt: buf.readUInt32BE(12),
    token: token ?? '',
    fingerprint,
    graceMs: 0,
  };
}
