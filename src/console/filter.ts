/**
 * The list filters no store indexes: an event type (exact, or a prefix ending in `*`) and a range of
 * accepted times. They are applied to the store's own list, read in batches from the page's cursor
 * and bounded: one page scans at most {@link SCAN_MAX} entries, so a filter that matches little
 * never reads a whole table in one request. A page that hit the bound says so and its next link
 * continues the scan where it stopped.
 */
import type { InboxEntryView, InboxState, InboxStore } from '../core/inbox.js';

/** Entries read from the store for one filtered page, at most. */
export const SCAN_MAX = 5_000;
/** Entries read from the store at a time while scanning. */
export const SCAN_BATCH = 500;

export interface EntryFilter {
  /** The exact type, or a prefix when it ends with `*` (`invoice.*`). */
  readonly type?: string | undefined;
  /** Accepted at or after (ms since the epoch). */
  readonly since?: number | undefined;
  /** Accepted before (ms since the epoch). */
  readonly until?: number | undefined;
}

/** The query text of a filter, as its links carry it. */
export interface FilterText {
  readonly type?: string | undefined;
  readonly since?: string | undefined;
  readonly until?: string | undefined;
}

// A browser's datetime-local value (read as UTC), or an ISO time with its offset.
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?$/;

/** The filter of a query, or `invalid` for a time that is not one. */
export function filterOf(q: URLSearchParams): { filter: EntryFilter; text: FilterText } | 'invalid' {
  const field = (name: string) => q.get(name)?.trim().slice(0, 200) || undefined;
  const text: FilterText = { type: field('type'), since: field('since'), until: field('until') };
  const time = (value: string | undefined) => {
    if (value === undefined) return undefined;
    if (!TIME.test(value)) return Number.NaN;
    return Date.parse(/Z|[+-]\d{2}:\d{2}$/.test(value) ? value : `${value}Z`);
  };
  const since = time(text.since);
  const until = time(text.until);
  if (Number.isNaN(since) || Number.isNaN(until)) return 'invalid';
  return { filter: { type: text.type, since, until }, text };
}

export const filtering = (f: EntryFilter): boolean =>
  f.type !== undefined || f.since !== undefined || f.until !== undefined;

export function matches(f: EntryFilter, entry: InboxEntryView): boolean {
  if (f.type !== undefined) {
    const type = entry.type ?? '';
    if (f.type.endsWith('*') ? !type.startsWith(f.type.slice(0, -1)) : type !== f.type) return false;
  }
  const at = entry.acceptedAt.getTime();
  return (f.since === undefined || at >= f.since) && (f.until === undefined || at < f.until);
}

/** A position in a list, as the console's links carry it. */
export type Position = Record<string, string | number | undefined>;

/** One read of the store's list: the entries from a position, and the position after them. */
export type Read = (at: Position, limit: number) => Promise<{ entries: InboxEntryView[]; next?: Position }>;

/**
 * A page of `size` matching entries, scanned from `start` in batches: the entries, where the next
 * page starts (after the last entry shown, or after the last scanned when the bound was reached),
 * and how many entries were read. An entry without a cursor (an inbox of one's own that gives none)
 * ends the page at its batch's end, however many matched in it.
 */
export async function scan(
  read: Read,
  start: Position,
  size: number,
  f: EntryFilter,
  positionAfter: (entry: InboxEntryView) => Position | undefined,
): Promise<{ entries: InboxEntryView[]; next: Position | undefined; scanned: number; bounded: boolean }> {
  const shown: InboxEntryView[] = [];
  let at = start;
  let scanned = 0;
  for (;;) {
    const batch = await read(at, Math.min(SCAN_BATCH, SCAN_MAX - scanned));
    scanned += batch.entries.length;
    shown.push(...batch.entries.filter((e) => matches(f, e)));
    if (shown.length > size) {
      const after = positionAfter(shown[size - 1]!);
      if (after) return { entries: shown.slice(0, size), next: after, scanned, bounded: false };
      return { entries: shown, next: batch.next, scanned, bounded: false };
    }
    if (!batch.next) return { entries: shown, next: undefined, scanned, bounded: false };
    if (scanned >= SCAN_MAX) return { entries: shown, next: batch.next, scanned, bounded: true };
    at = batch.next;
  }
}

/**
 * The reads of one state's list (of a receiver): `limit` entries from a position, one more read to
 * know whether a next page exists (no count). The next position is after the last entry read: its
 * cursor, or an offset where the inbox gives none (one of its own, written before cursors).
 */
export function stateList(
  inbox: InboxStore,
  state: InboxState | undefined,
  receiver: string | undefined,
): Read {
  return async (at, limit) => {
    const after = typeof at.after === 'string' ? at.after : undefined;
    const offset = Number(at.offset ?? 0);
    const got = await inbox.list({ state, receiver, limit: limit + 1, offset, after });
    const entries = got.slice(0, limit);
    const cursor = entries.at(-1)?.cursor;
    if (got.length <= limit) return { entries };
    return { entries, next: cursor !== undefined ? { after: cursor } : { after, offset: offset + limit } };
  };
}
