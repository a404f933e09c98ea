/**
 * The inbox contract: a verified delivery written durably under its dedup key in one atomic step,
 * then processed by workers under the same fenced leases as inline deliveries (owner token,
 * monotonic attempt, store clock, extension while the handler runs, a deadline). An entry whose
 * handler fails is retried after a backoff, and becomes dead after too many attempts or too long:
 * kept and visible, never dropped silently.
 *
 * ```
 * absent ──accept──▶ pending(due = now)                       answered 2xx: from here on it is durable
 * absent ──accept(claim)──▶ processing(token, attempt 1)      hybrid: the accepting request runs it first
 * pending (due) ──take──▶ processing(token, attempt + 1, expiresAt = now + lease)
 * processing ──lease runs out──▶ takeable by `take` (attempt + 1)
 * processing ──extend(token)──▶ processing(expiresAt = now + lease)
 * processing ──complete(token)──▶ completed(kept for retention, body dropped if asked)
 * processing ──retry(token, delay)──▶ pending(due = now + delay)
 * processing ──bury(token)──▶ dead(kept until an operator requeues or purges it)
 * dead ──requeue──▶ pending(due = now)
 * completed ──retention runs out──▶ absent (purge)
 * ```
 *
 * Every write after `take`/`accept(claim)` presents the token and acts only for the current owner.
 * All time is the store's clock, as for claims. A store is a correct inbox when it passes
 * `onceonly/testing`'s inbox conformance suite.
 */
import { ConfigError } from './errors.js';
import type { Lease } from './lease.js';
import type { StepStore } from './step-store.js';

/** What a receiver keeps of a verified delivery so a worker can run it later. */
export interface InboxDelivery {
  /** The exact bytes of the body. */
  readonly body: Uint8Array;
  /** The request headers as name/value pairs (names lower case). */
  readonly headers: readonly (readonly [string, string])[];
  /** The URL the provider called, where the provider signs it (Twilio). */
  readonly url?: string | undefined;
  /** When the delivery arrived: timestamp tolerance is measured from it when the worker re-verifies. */
  readonly receivedAt: Date;
}

/** One entry to accept. */
export interface InboxAcceptInput extends InboxDelivery {
  /** The dedup key (receiver key space plus event id or digest), as for claims. */
  readonly key: string;
  /** Fingerprint of the event; the same key with another fingerprint is a conflict. */
  readonly fingerprint: string;
  /** The receiver's name (key space), so one inbox table can serve several receivers. */
  readonly receiver: string;
  /** The event type, for listing and routing. */
  readonly type?: string | undefined;
  /** The provider's event id, for look-up by operators. */
  readonly id?: string | undefined;
  /** For one event of a batch delivery (SendGrid): the event's id within the body. */
  readonly item?: string | undefined;
}

export interface InboxAcceptOptions {
  /**
   * Hybrid mode: write the entry already processing, owned by the caller for `leaseMs` (attempt 1),
   * so the accepting request can run it at once while no worker may take it.
   */
  readonly claimMs?: number | undefined;
}

/** What `accept` found. */
export type InboxAccepted =
  | { readonly status: 'accepted'; readonly lease?: Lease | undefined }
  | {
      readonly status: 'duplicate';
      /** The state of the entry already there. */
      readonly state: InboxState;
    }
  | { readonly status: 'conflict'; readonly state: InboxState };

export type InboxState = 'pending' | 'processing' | 'completed' | 'dead';

/** An entry as a worker takes it: its delivery, and the lease it now holds. */
export interface InboxJob extends InboxDelivery {
  readonly key: string;
  readonly receiver: string;
  readonly type: string | undefined;
  readonly id: string | undefined;
  readonly item: string | undefined;
  readonly fingerprint: string;
  /** The lease held on the entry: attempt is the fencing number of this run. */
  readonly lease: Lease;
  /** When the entry was accepted (store clock). */
  readonly acceptedAt: Date;
  /**
   * Set when the store could not read the entry back (its stored delivery or fields were changed or
   * damaged outside onceonly): the job carries no delivery, and the worker buries it as dead, with
   * this line as its error, instead of one bad row failing every take that reaches it.
   */
  readonly unreadable?: string | undefined;
  /**
   * True when the entry was taken from a run whose lease ran out (its process died, or it stalled
   * past its lease), not from pending: that run ended without a verdict, and counts as a spent
   * attempt. A worker buries such an entry once its attempts pass `maxAttempts` instead of running it
   * again, so an event that kills every process that runs it (a poison message) ends dead, not in a
   * crash loop. A requeued dead entry is pending, not taken over: it gets its run.
   */
  readonly takenOver?: boolean | undefined;
}

/**
 * The JSON head of a stored delivery as the stores write it: `[headers, url, receivedAt]`, then
 * (SQL) the exact type, id and item. A store checks what it reads back against this.
 */
export function isStoredDelivery(
  v: unknown,
): v is [[string, string][], string | null, number, ...(string | null)[]] {
  return (
    Array.isArray(v) &&
    v.length >= 3 &&
    Array.isArray(v[0]) &&
    v[0].every(
      (h: unknown) =>
        Array.isArray(h) && h.length === 2 && typeof h[0] === 'string' && typeof h[1] === 'string',
    ) &&
    (v[1] === null || typeof v[1] === 'string') &&
    Number.isFinite(v[2]) &&
    v.slice(3).every((x: unknown) => x === null || typeof x === 'string')
  );
}

/**
 * The job for an entry its store could not read back (see {@link InboxJob.unreadable}): what is
 * known of it and its lease, an empty delivery, and why.
 */
export function unreadableJob(
  known: Pick<InboxJob, 'key' | 'receiver' | 'fingerprint' | 'acceptedAt' | 'lease'> &
    Partial<Pick<InboxJob, 'type' | 'id' | 'item'>>,
  error: unknown,
): InboxJob {
  const why = error instanceof Error ? error.message : String(error);
  return {
    type: undefined,
    id: undefined,
    item: undefined,
    ...known,
    body: new Uint8Array(0),
    headers: [],
    receivedAt: known.acceptedAt,
    unreadable: inboxErrorLine(`the stored entry could not be read back: ${why}`),
  };
}

/** A read-only view of one entry, for operators. */
export interface InboxEntryView {
  readonly key: string;
  readonly receiver: string;
  readonly state: InboxState;
  readonly type: string | undefined;
  readonly id: string | undefined;
  /** Runs so far (the attempt of the last or current run); 0 before the first. */
  readonly attempts: number;
  readonly acceptedAt: Date;
  /** Pending: when it is due. Processing: when its lease runs out. Completed: when it is forgotten. */
  readonly dueAt: Date;
  readonly updatedAt: Date;
  /** The last failure, as the worker recorded it (a short line, never the body). */
  readonly lastError: string | undefined;
  /** Whether the body is still kept (dropped after completion when asked). */
  readonly hasBody: boolean;
  /**
   * Where a list continues after this entry: pass it as {@link InboxListOptions.after} for the next
   * page. Set by `list`, not by `get`; opaque, and of the store that made it.
   */
  readonly cursor?: string | undefined;
}

/** Counts by state, and how late the oldest due entry is. */
export interface InboxStats {
  readonly pending: number;
  readonly processing: number;
  readonly completed: number;
  readonly dead: number;
  /**
   * Of `pending`, the entries whose next attempt is ahead: they failed and wait for it (retry
   * scheduled). Every built-in store counts them; an inbox of one's own may not.
   */
  readonly scheduled?: number | undefined;
  /** Age (ms) of the oldest pending entry that is due now, 0 when none is due. */
  readonly oldestDueMs: number;
}

export interface InboxTakeOptions {
  /** The longest number of entries to take. */
  readonly limit: number;
  readonly leaseMs: number;
  /** Only entries of this receiver (key space). */
  readonly receiver?: string | undefined;
}

export interface InboxListOptions {
  readonly state?: InboxState | undefined;
  readonly receiver?: string | undefined;
  /** The longest number of entries (100 by default). */
  readonly limit?: number | undefined;
  /**
   * Entries to pass over first, in the list's order: pages of `limit` read on the store (its
   * ordered index, a sorted set), never the whole table. 0 by default.
   */
  readonly offset?: number | undefined;
  /**
   * Continue after this entry: the `cursor` of the last entry of the page before (`offset` then
   * counts from there). The SQL inboxes read such a page from their index wherever it starts
   * (keyset paging), where an offset walks every entry before it; the other stores continue at its
   * position. A cursor another store made, or no cursor at all, is refused (`invalid_option`).
   */
  readonly after?: string | undefined;
}

/** A cursor of the stores that continue a list at a position: `@` and the position after the entry. */
export const positionCursor = (position: number): string => `@${position}`;

/**
 * The position an `after` of {@link positionCursor} continues at (0 with no cursor). Throws
 * `invalid_option` for any other text (a cursor is read from a URL by the console: it is checked).
 */
export function positionAfter(after: string | undefined, store: string): number {
  if (after === undefined) return 0;
  const match = /^@(\d{1,15})$/.exec(after);
  if (!match) throw invalidCursor(after, store);
  return Number(match[1]);
}

/** The error of a list `after` that is not a cursor this store made (every store says it alike). */
export const invalidCursor = (after: string, store: string): ConfigError =>
  new ConfigError(
    'invalid_option',
    `onceonly: ${store} inbox list after must be a cursor its list gave (an entry's cursor), got ${JSON.stringify(after.slice(0, 40))}`,
  );

/**
 * An inbox: the built-in stores offer one beside their claims (`store.inbox`), over the same client.
 */
export interface InboxStore {
  /**
   * Writes the delivery under its key in one atomic step, or reports the entry already there:
   * `duplicate` (same fingerprint) or `conflict` (another). Durable once it resolves.
   */
  accept(input: InboxAcceptInput, options?: InboxAcceptOptions): Promise<InboxAccepted>;
  /**
   * Takes up to `limit` entries that are due (pending with `dueAt` passed, or processing with a
   * lease that ran out), each under a new lease with attempt + 1, oldest due first. Concurrent
   * takers never take the same entry.
   */
  take(options: InboxTakeOptions): Promise<InboxJob[]>;
  /** Pushes the lease's end to now + `leaseMs`. `false` unless the entry is still ours and processing. */
  extend(lease: Lease, options: { leaseMs: number }): Promise<boolean>;
  /** Marks the entry completed, kept `retentionMs`; drops the body when `dropBody`. `false` unless ours. */
  complete(lease: Lease, options: { retentionMs: number; dropBody?: boolean }): Promise<boolean>;
  /**
   * Optional: `complete` for several leases in one round trip (one statement, one script), each
   * entry completed only under its own lease as `complete` checks it; whether each was, in order.
   * Workers send the completes of runs that end together through it.
   */
  completeMany?(
    leases: readonly Lease[],
    options: { retentionMs: number; dropBody?: boolean },
  ): Promise<boolean[]>;
  /**
   * Back to pending, due after `delayMs`, recording `error` (as {@link inboxErrorLine} keeps it).
   * `false` unless ours.
   */
  retry(lease: Lease, options: { delayMs: number; error: string }): Promise<boolean>;
  /** Dead: kept, not retried, recording `error` (as {@link inboxErrorLine} keeps it). `false` unless ours. */
  bury(lease: Lease, options: { error: string }): Promise<boolean>;
  /** Counts by state, and the oldest due entry's age. */
  stats(options?: { receiver?: string }): Promise<InboxStats>;
  /** Entries, dead first then oldest due first (or of one state), from `offset`, at most `limit`. */
  list(options?: InboxListOptions): Promise<InboxEntryView[]>;
  /** One entry, with its delivery when the body is kept. */
  get(key: string): Promise<(InboxEntryView & { delivery: InboxDelivery | undefined }) | undefined>;
  /**
   * Dead entries back to pending, due now: one key, or every dead entry (of a receiver). One key
   * that is pending with its next attempt still ahead is made due now ("retry now"); a processing
   * entry is never touched (its run owns it). Returns how many changed.
   */
  requeue(target: { key: string } | { dead: true; receiver?: string }): Promise<number>;
  /** Deletes completed entries past their retention. Returns how many. */
  purge(options?: { batchSize?: number }): Promise<number>;
  /**
   * Durable steps (`ctx.step`) of an entry, under the lease of its run: kept through `retry`,
   * `bury`, `requeue` and takeovers, gone with `complete`. See {@link StepStore}.
   */
  readonly steps?: StepStore | undefined;
  /**
   * Optional: tells `watcher` at once when an entry of `receiver` (of every receiver when
   * undefined) may have become due in any process (accepted, requeued, retried with no delay), so an
   * idle worker in another process takes it without waiting for its next poll. PostgreSQL (LISTEN/
   * NOTIFY) and Redis (pub/sub) have it, over one connection per store shared by its watchers.
   *
   * Only a hint: `take` stays the one authority, so a lost, late, duplicated or spurious call can
   * neither run an entry twice nor lose one, and a worker still polls. When the connection drops,
   * or cannot be opened, `watcher.failed` hears why and the store opens it again with backoff;
   * each time it is (re)opened `watcher.due` is called once, for what was accepted while nobody
   * listened. Returns the function that ends this watch; the store's `close()` ends them all.
   */
  watch?(receiver: string | undefined, watcher: InboxWatcher): () => void;
}

/** Who an {@link InboxStore.watch} tells. Neither function may throw. */
export interface InboxWatcher {
  /** An entry of the watched receiver may be due now: take. */
  readonly due: () => void;
  /** The watch could not listen, or its connection dropped: the store retries it with backoff. */
  readonly failed?: ((error: unknown) => void) | undefined;
}

/** The longest `lastError` an inbox keeps, in characters. */
export const INBOX_ERROR_MAX = 1_000;

/**
 * A failure as every inbox records it (`retry`, `bury`): at most {@link INBOX_ERROR_MAX} characters,
 * NUL bytes and lone surrogates replaced by U+FFFD, so any error text fits any store's column
 * (PostgreSQL refuses NUL in text, MySQL's TEXT holds 64 KiB) and reads back the same everywhere.
 */
export function inboxErrorLine(error: string): string {
  const text = String(error);
  const cut = text.length > INBOX_ERROR_MAX ? `${text.slice(0, INBOX_ERROR_MAX - 3)}...` : text;
  return wellFormed(cut);
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is one of the characters replaced
const ILL_FORMED = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** `s` with NUL bytes and lone surrogates replaced by U+FFFD (text every store keeps as is). */
export function wellFormed(s: string): string {
  return s.replace(ILL_FORMED, '\ufffd');
}

/**
 * An inbox as a plain object of its own methods, each bound to `inbox` (a class instance's methods
 * live on its prototype): a copy by spread (`{ ...store.inbox }`) keeps them all.
 */
export function plainInbox(inbox: InboxStore): InboxStore {
  return {
    accept: (input, options) => inbox.accept(input, options),
    take: (options) => inbox.take(options),
    extend: (lease, options) => inbox.extend(lease, options),
    complete: (lease, options) => inbox.complete(lease, options),
    ...(inbox.completeMany
      ? { completeMany: (leases, options) => inbox.completeMany!(leases, options) }
      : {}),
    retry: (lease, options) => inbox.retry(lease, options),
    bury: (lease, options) => inbox.bury(lease, options),
    stats: (options) => inbox.stats(options),
    list: (options) => inbox.list(options),
    get: (key) => inbox.get(key),
    requeue: (target) => inbox.requeue(target),
    purge: (options) => inbox.purge(options),
    steps: inbox.steps,
    ...(inbox.watch ? { watch: (receiver, watcher) => inbox.watch!(receiver, watcher) } : {}),
  };
}
