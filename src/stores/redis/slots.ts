/**
 * The name of a claim key's steps hash, in the claim key's own Redis Cluster slot: a script that
 * checks the claim and writes its steps must name both, and on a cluster both must be of one slot.
 *
 * A claim key (`<prefix>k:<key>`) carries no hash tag of its own, unless its key has braces, so its
 * slot is the CRC16 of its whole name. Its steps hash is `<claim key> s` when the claim key has a
 * hash tag (the same tag, the same slot), else `<claim key> s{<tag>}`, where `<tag>` (1 to 4 of
 * `A-Za-z0-9_-`) is the first whose name hashes to the claim key's slot. The slot is computed on
 * the name the server sees, after the client's own key prefix (ioredis `keyPrefix`). No claim key
 * holds a space after the prefix (`storeKey` gives printable ASCII without one, or a hash), so no
 * claim key is ever a steps key, and each claim key has one steps key.
 */

const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let j = 0; j < 8; j++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    table[i] = c;
  }
  return table;
})();

/** CRC16-CCITT (XMODEM), as Redis Cluster hashes keys, continuing from `crc`. */
export function crc16(bytes: Uint8Array, crc = 0): number {
  let c = crc;
  for (const byte of bytes) c = ((c << 8) & 0xffff) ^ TABLE[((c >> 8) ^ byte) & 0xff]!;
  return c;
}

const OPEN = 0x7b;
const CLOSE = 0x7d;

/** The Cluster slot of a key's name (its bytes), by Redis's rule for hash tags. */
export function slotOf(name: Uint8Array): number {
  const open = name.indexOf(OPEN);
  const close = open === -1 ? -1 : name.indexOf(CLOSE, open + 1);
  const hashed = close > open + 1 ? name.subarray(open + 1, close) : name;
  return crc16(hashed) & 0x3fff;
}

const ALPHABET = Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-');

/** The first tag (shortest, then in ALPHABET's order) that brings the CRC from `state` to `slot`. */
function solve(state: number, tail: Uint8Array, slot: number): string {
  const tag: number[] = [];
  const search = (crc: number, depth: number): boolean => {
    if (depth === 0) return (crc16(tail, crc) & 0x3fff) === slot;
    for (const c of ALPHABET) {
      tag.push(c);
      if (search(((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ c) & 0xff]!, depth - 1)) return true;
      tag.pop();
    }
    return false;
  };
  // Four characters reach every slot many times over; three almost always do.
  for (let depth = 1; depth <= 4; depth++) if (search(state, depth)) return Buffer.from(tag).toString();
  throw new Error(`onceonly: no hash tag found for slot ${slot}`);
}

// The common case (a claim key without braces: the tag alone is hashed), by slot.
const tags = new Map<number, string>();
const EMPTY = new Uint8Array(0);

/** The steps hash of `claimKey` (see the module comment); `clientPrefix` is the client's key prefix. */
export function stepsKeyOf(claimKey: string, clientPrefix = ''): string {
  const name = Buffer.from(clientPrefix + claimKey);
  const open = name.indexOf(OPEN);
  const close = open === -1 ? -1 : name.indexOf(CLOSE, open + 1);
  if (close > open + 1) return `${claimKey} s`;
  const slot = crc16(name) & 0x3fff;
  if (open === -1) {
    let tag = tags.get(slot);
    if (tag === undefined) {
      tag = solve(0, EMPTY, slot);
      tags.set(slot, tag);
    }
    return `${claimKey} s{${tag}}`;
  }
  // A `{` without a tag: from it to the tag's `}` is hashed when no `}` follows it, else (`{}`)
  // the whole name is.
  const head = Buffer.concat([close === -1 ? name.subarray(open + 1) : name, Buffer.from(' s{')]);
  return `${claimKey} s{${solve(crc16(head), close === -1 ? EMPTY : Buffer.from('}'), slot)}}`;
}
