/**
 * The DynamoDB inbox's items: an entry's attributes, its partition key, and how an item reads back
 * as a view or a delivery.
 *
 * | attribute | type | meaning |
 * | --- | --- | --- |
 * | `pk` | S | `i:` + the key as storeKey holds it (printable ASCII as is, else its lossless SHA-256) |
 * | `key`, `receiver`, `fingerprint`, `type`, `id`, `item` | S | as accepted |
 * | `state` | S | `pending`, `processing`, `completed` or `dead` |
 * | `attempts` | N | runs so far: the lease's attempt |
 * | `token` | S | the owner's token (processing only) |
 * | `due` | N | ms: pending, when due; processing, the lease's end; completed, retention's end |
 * | `iq`, `idue` | S, N | the receiver and `due`, only while pending or processing: the `inbox` index |
 * | `acceptedAt`, `updatedAt`, `receivedAt` | N | ms since the epoch |
 * | `body` | B | the exact bytes (dropped with `headers` and `url` on completion when asked) |
 * | `headers` | S | JSON name/value pairs |
 * | `url`, `lastError` | S | the URL the provider called; the last failure |
 * | `steps` | M | durable steps, name to result, until completion |
 * | `ttl` | N | completed: seconds since the epoch when TTL may delete it |
 */
import type { InboxAcceptInput, InboxDelivery, InboxEntryView, InboxState } from '../../core/inbox.js';
import { storeKey } from '../../core/keys.js';
import { StoreUnavailableError } from '../../errors.js';
import type { Attr, Item } from './items.js';

/** The inbox's index: partition key `iq` (S, the receiver), sort key `idue` (N, ms). */
export const INBOX_INDEX = 'inbox';
/** The most of a delivery (body, headers, URL, type, id, item) an entry holds, in bytes. */
export const DYNAMODB_INBOX_MAX_BYTES = 256 * 1024;
/** The most an entry's steps hold together: what is left of the 400 KB item past the delivery. */
export const DYNAMODB_INBOX_STEPS_MAX_BYTES = 96 * 1024;

export const NAMES: Record<string, string> = {
  '#pk': 'pk',
  '#key': 'key',
  '#rcv': 'receiver',
  '#state': 'state',
  '#fp': 'fingerprint',
  '#type': 'type',
  '#id': 'id',
  '#item': 'item',
  '#att': 'attempts',
  '#token': 'token',
  '#due': 'due',
  '#acc': 'acceptedAt',
  '#upd': 'updatedAt',
  '#err': 'lastError',
  '#body': 'body',
  '#hdr': 'headers',
  '#url': 'url',
  '#recv': 'receivedAt',
  '#steps': 'steps',
  '#iq': 'iq',
  '#idue': 'idue',
  '#ttl': 'ttl',
};

/** The names an expression uses (DynamoDB refuses unused ones), plus `extra`. */
export function names(
  texts: (string | undefined)[],
  extra: Record<string, string> = {},
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name] of texts.join(' ').matchAll(/#[A-Za-z]+/g))
    if (NAMES[name] !== undefined) out[name] = NAMES[name]!;
  return { ...out, ...extra };
}

/** Of `values`, those an expression uses (DynamoDB refuses unused ones). */
export function used(texts: (string | undefined)[], values: Record<string, Attr>): Record<string, Attr> {
  const out: Record<string, Attr> = {};
  for (const [name] of texts.join(' ').matchAll(/:[A-Za-z]+/g))
    if (values[name] !== undefined) out[name] = values[name]!;
  return out;
}

/**
 * The partition key of an entry's item: `i:` + the key as every store holds it (storeKey), so two
 * keys with different lone surrogates (one U+FFFD in UTF-8) stay two entries.
 */
export function inboxPk(key: string): string {
  return `i:${storeKey(key)}`;
}
export const isInboxPk = (pk: string) => pk.startsWith('i:') || pk.startsWith('ih:');

export const str = (a: Attr | undefined) => (typeof a?.S === 'string' ? a.S : undefined);
export const num = (a: Attr | undefined) => (typeof a?.N === 'string' ? Number(a.N) : undefined);
export const STATES = new Set<InboxState>(['pending', 'processing', 'completed', 'dead']);
export const stateOf = (item: Item): InboxState => {
  const s = str(item.state) as InboxState;
  return STATES.has(s) ? s : 'dead';
};
export const OWNED = '#state = :processing AND #token = :token';
export const rank = (s: InboxState) => (s === 'dead' ? 0 : s === 'pending' ? 1 : s === 'processing' ? 2 : 3);

export function viewOf(item: Item): InboxEntryView {
  return {
    key: str(item.key) ?? '',
    receiver: str(item.receiver) ?? '',
    state: stateOf(item),
    type: str(item.type),
    id: str(item.id),
    attempts: num(item.attempts) ?? 0,
    acceptedAt: new Date(num(item.acceptedAt) ?? 0),
    dueAt: new Date(num(item.due) ?? 0),
    updatedAt: new Date(num(item.updatedAt) ?? 0),
    lastError: str(item.lastError),
    hasBody: item.body?.B !== undefined,
  };
}

/** The delivery an item holds; throws when it is not one the store wrote. */
export function deliveryOf(item: Item): InboxDelivery {
  const body = item.body?.B;
  const headers: unknown = JSON.parse(str(item.headers) ?? 'null');
  const receivedAt = num(item.receivedAt);
  if (!(body instanceof Uint8Array)) throw new Error('no binary body');
  if (
    !Array.isArray(headers) ||
    !headers.every((h) => Array.isArray(h) && h.length === 2 && h.every((x) => typeof x === 'string'))
  )
    throw new Error('headers are not name/value pairs');
  if (receivedAt === undefined || !Number.isFinite(receivedAt)) throw new Error('no receivedAt');
  return {
    body: new Uint8Array(body),
    headers: (headers as [string, string][]).map(([n, v]) => [n, v] as const),
    url: str(item.url),
    receivedAt: new Date(receivedAt),
  };
}

/** The store's inbox over one table; see the module's comment. */

/** Refuses (503 `store_full`) a delivery past {@link DYNAMODB_INBOX_MAX_BYTES}: its item could not hold it. */
export function checkSize(input: InboxAcceptInput, headers: string): void {
  const text = `${input.url ?? ''}${input.type ?? ''}${input.id ?? ''}${input.item ?? ''}${input.key}${input.receiver}`;
  const size = input.body.byteLength + Buffer.byteLength(headers) + Buffer.byteLength(text);
  if (size <= DYNAMODB_INBOX_MAX_BYTES) return;
  throw new StoreUnavailableError(
    `onceonly: DynamoDB store's inbox cannot keep this delivery: it holds ${size} bytes, past the ${DYNAMODB_INBOX_MAX_BYTES} an entry's item may (DynamoDB items hold 400 KB); use another store's inbox for deliveries this large`,
    { code: 'store_full' },
  );
}
