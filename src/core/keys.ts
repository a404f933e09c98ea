/**
 * Dedup keys that every store can hold, and that never collide. A sender's id can be anything: a
 * megabyte, a NUL byte (PostgreSQL text refuses it), a lone UTF-16 surrogate (which UTF-8 stores
 * turn into U+FFFD, so `evt_\ud800` and `evt_\udbff` would become one key on Redis, PostgreSQL and
 * MySQL but two on the memory store and SQLite). So:
 *
 * - material made of 1 to 200 printable ASCII characters (no space), not starting with `~`, is kept
 *   as it is: `stripe:evt_1` stays readable;
 * - anything else becomes `~sha256:` + the base64url SHA-256 of its UTF-16 code units: lossless
 *   (two different strings have different code units, lone surrogates included), 51 characters.
 *
 * Kept material never starts with `~`, so a kept key never equals a hashed one; hashed keys are
 * distinct as far as SHA-256 is. The same input gives the same key on every store.
 */
import { createHash } from 'node:crypto';
import { ConfigError } from './errors.js';

/** The longest material kept as it is. */
export const MAX_KEPT_LENGTH = 200;

// One pass, no backtracking beyond the 200 characters: anchored, bounded repetition.
const KEPT = /^[\x21-\x7d][\x21-\x7e]{0,199}$/;

/** `material` as a key part every store holds (see the module comment). */
export function keyPart(material: string): string {
  if (material.length <= MAX_KEPT_LENGTH && KEPT.test(material)) return material;
  return hashed(material);
}

function hashed(material: string): string {
  return `~sha256:${createHash('sha256').update(Buffer.from(material, 'utf16le')).digest('base64url')}`;
}

/** The longest key a store keeps as it is. */
export const MAX_STORED_LENGTH = 512;
const STORED = /^[\x21-\x7d][\x21-\x7e]{0,511}$/;

/**
 * A key as the stores hold it, whoever calls them (the receiver, once(), your own `record()`):
 * up to 512 printable ASCII characters as they are, anything else hashed losslessly as
 * {@link keyPart} does. The receiver's keys (a name, `:`, a kept id of 200 at most) are always kept.
 */
export function storeKey(key: string): string {
  if (key.length <= MAX_STORED_LENGTH && STORED.test(key)) return key;
  return hashed(key);
}

/** The key of a body digest (hex SHA-256 of what the signature covers) within a key space. */
export function digestKey(space: string, digestHex: string): string {
  return `${space}:~body:${digestHex}`;
}

/** The key of a signed event id within a key space. */
export function idKey(space: string, id: string): string {
  return `${space}:${keyPart(id)}`;
}

// A key space: a short name without `:` (it ends at the first one) that reads well in every store.
const SPACE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Checks a key space name (a receiver's `name`), naming the option in the error. */
export function checkSpace(space: unknown, option: string): string {
  if (typeof space !== 'string' || !SPACE.test(space)) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: ${option} must be 1 to 64 letters, digits, '.', '_' or '-' (starting with a letter or digit), got ${JSON.stringify(String(space)).slice(0, 80)}`,
    );
  }
  return space;
}
