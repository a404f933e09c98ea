/**
 * How the SQL inbox reads its rows (an entry's view, a taken job and its delivery) and writes an
 * accepted entry's values.
 */

import type {
  InboxAcceptInput,
  InboxDelivery,
  InboxEntryView,
  InboxJob,
  InboxState,
} from '../../core/inbox.js';
import { invalidCursor, isStoredDelivery, unreadableJob, wellFormed } from '../../core/inbox.js';
import { storeKey } from '../../core/keys.js';
import { createLease, type Lease } from '../../core/types.js';
import { type Row, STATE } from './inbox-types.js';

export const num = (v: unknown): number => Number(v);
export const opt = (v: unknown): string | undefined => (v == null ? undefined : String(v));
const truthy = (v: unknown): boolean => v === true || Number(v) === 1;

function bytesOf(v: unknown): Uint8Array {
  if (v instanceof Uint8Array) return new Uint8Array(v);
  // A driver that hands bytes back as a hex string (never the built-in clients): read it as such.
  if (typeof v === 'string' && v.startsWith('\\x')) return new Uint8Array(Buffer.from(v.slice(2), 'hex'));
  throw new TypeError(`onceonly: inbox body came back as ${typeof v}, not bytes`);
}

/** The copy of a free text (type, id, item) in its column: any store keeps it, its meta has it exactly. */
const readable = (v: string | undefined): string | null =>
  v === undefined ? null : wellFormed(v.length > TEXT_MAX ? v.slice(0, TEXT_MAX) : v);
const TEXT_MAX = 1_000;

const asBuffer = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

export function stateOf(row: Row): InboxState {
  const s = num(row.state);
  if (s === STATE.completed) return 'completed';
  if (s === STATE.dead) return 'dead';
  return row.token === '' ? 'pending' : 'processing';
}

/** The key of a row as given: `full_key` (JSON) when the stored key is its hash, else the stored key. */
const keyOf = (row: Row, stored = String(row.entry_key)): string =>
  row.full_key == null ? stored : (JSON.parse(String(row.full_key)) as string);

/** An entry as `list` and `get` show it. */
export const view = (row: Row): InboxEntryView => ({
  key: keyOf(row),
  receiver: String(row.receiver),
  state: stateOf(row),
  type: opt(row.event_type),
  id: opt(row.event_id),
  attempts: num(row.attempts),
  acceptedAt: new Date(num(row.accepted_at)),
  dueAt: new Date(num(row.due_at)),
  updatedAt: new Date(num(row.updated_at)),
  lastError: opt(row.last_error),
  hasBody: truthy(row.has_body),
});

/** The rank of a state in a list of every state, as the statements' RANK orders them. */
const RANK: Record<InboxState, number> = { dead: 0, pending: 1, processing: 2, completed: 3 };

/** A SQL inbox's cursor: `k`, the entry's rank, due time and acceptance sequence (keyset paging). */
const keysetCursor = (rank: number, due: number, seq: string) => `k${rank}.${due}.${seq}`;

/** The position a keyset cursor names; `invalid_option` for any other text (the console reads it from a URL). */
function keysetAfter(after: string, store: string): { rank: number; due: number; seq: number } {
  const match = /^k([0-3])\.(\d{1,15})\.(\d{1,15})$/.exec(after);
  if (!match) throw invalidCursor(after, store);
  return { rank: Number(match[1]), due: Number(match[2]), seq: Number(match[3]) };
}

/**
 * The values a page after `after` binds (none without a cursor): of one state, due_at twice and
 * seq; of every state, the rank twice before them (see the statements' listSql).
 */
export function keysetValues(after: string | undefined, oneState: boolean, store: string): number[] {
  if (after === undefined) return [];
  const { rank, due, seq } = keysetAfter(after, store);
  return [...(oneState ? [] : [rank, rank]), due, due, seq];
}

/** An entry as `list` shows it: with its cursor, where the next page starts after it. */
export const listed = (row: Row): InboxEntryView => {
  const entry = view(row);
  return { ...entry, cursor: keysetCursor(RANK[entry.state], num(row.due_at), String(row.seq)) };
};

type Meta = [[string, string][], string | null, number, (string | null)?, (string | null)?, (string | null)?];

/** The delivery of a row, when it still has its body and meta. */
export const delivery = (row: Row): InboxDelivery | undefined => {
  if (row.meta == null || row.body == null) return undefined;
  const meta: unknown = JSON.parse(String(row.meta));
  if (!isStoredDelivery(meta)) throw new Error('its meta is not [headers, url, receivedAt, ...]');
  const [headers, url, receivedAt] = meta;
  return { body: bytesOf(row.body), headers, url: url ?? undefined, receivedAt: new Date(receivedAt) };
};

/**
 * The jobs of a take, and the stored key of each lease they hand out (see `storedOf`): one reader
 * per inbox.
 */
export function jobReader(): { job: (row: Row) => InboxJob; storedOf: (lease: Lease) => string } {
  // The stored key of each unreadable job's lease: its key as given may be the damaged part, and a
  // stored key run through storeKey again (a hashed one) would name no row, so it could never be
  // buried.
  const storedKeys = new WeakMap<Lease, string>();
  const storedOf = (lease: Lease): string => storedKeys.get(lease) ?? storeKey(lease.key);

  const job = (row: Row): InboxJob => {
    const stored = String(row.entry_key);
    const fingerprint = String(row.fingerprint);
    const leaseOf = (key: string) =>
      createLease({
        key,
        token: String(row.token),
        attempt: num(row.attempts),
        fingerprint,
        expiresAt: new Date(num(row.due_at)),
      });
    try {
      const key = keyOf(row);
      const kept = delivery(row);
      if (!kept) throw new Error('its body or meta is gone (NULL) while it is queued');
      // The exact type, id and item are in meta (JSON escapes NUL and lone surrogates, which a text
      // column refuses or mangles); the columns hold a readable copy for operators and listings.
      const meta = JSON.parse(String(row.meta)) as Meta;
      const exact = meta.length >= 6;
      return {
        ...kept,
        key,
        receiver: String(row.receiver),
        type: exact ? opt(meta[3]) : opt(row.event_type),
        id: exact ? opt(meta[4]) : opt(row.event_id),
        item: exact ? opt(meta[5]) : opt(row.item),
        fingerprint,
        acceptedAt: new Date(num(row.accepted_at)),
        takenOver: String(row.token).startsWith('1'),
        lease: leaseOf(key),
      };
    } catch (error) {
      // Changed or damaged outside onceonly: handed out as unreadable (the worker buries it,
      // reported), so the rest of the take runs. Its lease names the stored key when the key as
      // given cannot be read either; the owner-checked writes find its row through storedKeys.
      let key = stored;
      try {
        key = keyOf(row);
      } catch {}
      const lease = leaseOf(key);
      storedKeys.set(lease, stored);
      return unreadableJob(
        {
          key,
          receiver: String(row.receiver),
          fingerprint,
          acceptedAt: new Date(num(row.accepted_at)),
          lease,
          type: opt(row.event_type),
          id: opt(row.event_id),
        },
        error,
      );
    }
  };
  return { job, storedOf };
}

// The entry as accept writes it: everything but the times (the server's).
export const ENTRY =
  'full_key, receiver, state, token, attempts, fingerprint, event_type, event_id, item, meta, body';
export const entryValues = (input: InboxAcceptInput, stored: string, token: string): unknown[] => [
  input.key === stored ? null : JSON.stringify(input.key),
  input.receiver,
  STATE.queued,
  token,
  token === '' ? 0 : 1,
  input.fingerprint,
  readable(input.type),
  readable(input.id),
  readable(input.item),
  JSON.stringify([
    input.headers,
    input.url ?? null,
    input.receivedAt.getTime(),
    input.type ?? null,
    input.id ?? null,
    input.item ?? null,
  ]),
  asBuffer(input.body),
];
