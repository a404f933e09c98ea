/**
 * The DynamoDB store's items: one item per key (its claim, completion or released record, with its
 * steps in a map) and one per ordering-guard entity, in one table keyed by `pk` alone. Attribute
 * names, how a key becomes a partition key, and how an item reads back as a record.
 *
 * A claim item:
 *
 * | attribute | type | meaning |
 * | --- | --- | --- |
 * | `pk` | S | `k:` + the key as every store holds it (storeKey: printable ASCII as is, else its SHA-256) |
 * | `key` | S | the key as given, for the operator's views (cut at 2 KB, lone surrogates as U+FFFD) |
 * | `state` | S | `processing`, `released` or `completed` |
 * | `token` | S | the owner's token (processing, completed); absent once released |
 * | `attempt` | N | the fencing number |
 * | `fingerprint` | S | the claim's fingerprint, when it had one |
 * | `expiresAt` | N | ms since the epoch: the lease's end (processing, released) or retention's (completed) |
 * | `updatedAt` | N | ms since the epoch of the last write |
 * | `graceMs`, `graceS` | N | how long a takeable record is kept after its lease's end (ms, and whole seconds) |
 * | `dropAt` | N | ms since the epoch when the record's life ends: past it the item reads as absent |
 * | `ttl` | N | seconds since the epoch, at or after `dropAt`: DynamoDB's TTL deletes the item after it |
 * | `steps` | M | durable steps, name → result (processing and released records) |
 *
 * An ordering-guard item: `pk` = `v:` + the entity as storeKey holds it, `version` (N).
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { wellFormed } from '../../core/inbox.js';
import { storeKey } from '../../core/keys.js';
import type { RecordView } from '../../core/types.js';
import { conditionFailed } from './failure.js';

/** An attribute value as the DynamoDB wire format has it. */
export type Attr = AttributeValue;
export type Item = Record<string, AttributeValue>;

/** Every attribute name the store uses, by its placeholder. Expressions name attributes only through these. */
export const NAMES = {
  '#pk': 'pk',
  '#key': 'key',
  '#state': 'state',
  '#token': 'token',
  '#attempt': 'attempt',
  '#fp': 'fingerprint',
  '#exp': 'expiresAt',
  '#upd': 'updatedAt',
  '#graceMs': 'graceMs',
  '#graceS': 'graceS',
  '#dropAt': 'dropAt',
  '#ttl': 'ttl',
  '#steps': 'steps',
  '#version': 'version',
} as const;

/** The TTL attribute the table's Time to Live must be set on. */
export const TTL_ATTRIBUTE = NAMES['#ttl'];
/** The table's one key attribute (a string, the partition key). */
export const KEY_ATTRIBUTE = NAMES['#pk'];

/**
 * The partition key of a key's claim item: `k:` + the key as every store holds it (storeKey: up to
 * 512 printable ASCII characters as they are, anything else its lossless SHA-256). Never the raw
 * key: DynamoDB keeps text as UTF-8, where two keys with different lone surrogates would become one
 * (U+FFFD), and a partition key holds 2,048 bytes.
 */
export function claimPk(key: string): string {
  return `k:${storeKey(key)}`;
}

/** The partition key of an ordering-guard entity (`v:`, as {@link claimPk}). */
export function versionPk(entity: string): string {
  return `v:${storeKey(entity)}`;
}

/** The longest key an item's `key` attribute shows whole, in UTF-8 bytes (the item holds 400 KB). */
const MAX_SHOWN_KEY_BYTES = 2_048;

/**
 * The key as an item's `key` attribute shows it to the operator's views: whole when it is
 * well-formed text of at most 2 KB, else its first 1,000 characters (well-formed) and `...`. The
 * store never reads a key back from it: `pk` is what finds an item.
 */
export function shownKey(key: string): string {
  const fits = Buffer.byteLength(key, 'utf8') <= MAX_SHOWN_KEY_BYTES;
  if (fits && wellFormed(key) === key) return key;
  return fits ? wellFormed(key) : `${wellFormed(key.slice(0, 1_000))}...`;
}

/** Whether a `pk` is a claim item's (not an ordering guard's). */
export const isClaimPk = (pk: string) => pk.startsWith('k:') || pk.startsWith('h:');

export const S = (value: string): Attr => ({ S: value });
export const N = (value: number): Attr => ({ N: String(value) });

/** An expression's attribute names and values: only those it uses (DynamoDB refuses unused ones). */
export function expression(
  texts: readonly (string | undefined)[],
  values: Record<string, Attr>,
): { ExpressionAttributeNames: Record<string, string>; ExpressionAttributeValues?: Record<string, Attr> } {
  const text = texts.filter(Boolean).join(' ');
  const names: Record<string, string> = {};
  for (const [, name] of text.matchAll(/(#[A-Za-z]+)/g)) {
    const attribute = NAMES[name as keyof typeof NAMES];
    if (attribute !== undefined) names[name!] = attribute;
  }
  const used: Record<string, Attr> = {};
  for (const [, name] of text.matchAll(/(:[A-Za-z]+)/g)) {
    const value = values[name!];
    if (value !== undefined) used[name!] = value;
  }
  return Object.keys(used).length > 0
    ? { ExpressionAttributeNames: names, ExpressionAttributeValues: used }
    : { ExpressionAttributeNames: names };
}

/** A claim item as read back. */
export interface ClaimRecord {
  readonly key: string;
  readonly state: RecordView['state'];
  readonly token: string | undefined;
  readonly attempt: number;
  readonly fingerprint: string | undefined;
  readonly expiresAt: number;
  readonly updatedAt: number | undefined;
  readonly dropAt: number;
}

const str = (attr: Attr | undefined): string | undefined =>
  typeof attr?.S === 'string' ? attr.S : undefined;
const num = (attr: Attr | undefined): number | undefined =>
  typeof attr?.N === 'string' ? Number(attr.N) : undefined;

/**
 * A claim item as a record, or undefined when the item is not one the store wrote (the caller
 * reports it as foreign).
 */
export function readClaim(item: Item): ClaimRecord | undefined {
  const state = str(item.state);
  const attempt = num(item.attempt);
  const expiresAt = num(item.expiresAt);
  const dropAt = num(item.dropAt);
  if (
    (state !== 'processing' && state !== 'released' && state !== 'completed') ||
    attempt === undefined ||
    expiresAt === undefined ||
    dropAt === undefined
  )
    return undefined;
  return {
    key: str(item.key) ?? '',
    state,
    token: str(item.token),
    attempt,
    fingerprint: str(item.fingerprint),
    expiresAt,
    updatedAt: num(item.updatedAt),
    dropAt,
  };
}

/** The steps map of an item, as the store contract gives them back. */
export function readSteps(item: Item | undefined): Map<string, string> {
  const steps = new Map<string, string>();
  const map = item?.steps?.M;
  if (map) for (const [name, value] of Object.entries(map)) steps.set(name, str(value) ?? '');
  return steps;
}

/** A record's read-only view. */
export function viewOf(record: ClaimRecord): RecordView {
  return {
    key: record.key,
    state: record.state,
    attempt: record.attempt,
    fingerprint: record.fingerprint,
    expiresAt: new Date(record.expiresAt),
    updatedAt: record.updatedAt === undefined ? undefined : new Date(record.updatedAt),
  };
}

/** DynamoDB's TTL is in whole seconds: the first second at or after `ms`, plus the skew's seconds. */
export const ttlSeconds = (ms: number, skewMs: number) => Math.ceil((ms + skewMs) / 1000);

/** A conditional write's answer: what it returned when it landed, or the item that failed its condition. */
export type Written<T> = { done: true; out: T } | { done: false; item: Item | undefined };

/**
 * Runs one conditional write (`send`, whose other failures it throws as they come): `done` when it
 * landed; when its condition did not hold, the item that failed it, as DynamoDB returns it with
 * `ReturnValuesOnConditionCheckFailure: 'ALL_OLD'` (undefined without it, or from a server that
 * does not return it: dynalite).
 */
export async function conditional<T>(send: () => Promise<T>): Promise<Written<T>> {
  try {
    return { done: true, out: await send() };
  } catch (error) {
    if (!conditionFailed(error)) throw error;
    return { done: false, item: (error as { Item?: Item }).Item };
  }
}
