/**
 * The memory store's inbox: for tests and single-process apps. It keeps entries in this process
 * only, so it survives no restart: use a shared store's inbox where an accepted delivery must
 * outlive the process.
 */
import { newToken } from '../../core/crypto.js';
import { StoreFullError } from '../../core/errors.js';
import type {
  InboxAccepted,
  InboxAcceptInput,
  InboxAcceptOptions,
  InboxDelivery,
  InboxEntryView,
  InboxJob,
  InboxListOptions,
  InboxState,
  InboxStats,
  InboxStore,
  InboxTakeOptions,
} from '../../core/inbox.js';
import { inboxErrorLine, plainInbox, positionAfter, positionCursor } from '../../core/inbox.js';
import { createLease, type Lease } from '../../core/types.js';

interface Entry {
  key: string;
  receiver: string;
  state: InboxState;
  type: string | undefined;
  id: string | undefined;
  item: string | undefined;
  fingerprint: string;
  delivery: InboxDelivery | undefined;
  acceptedAt: number;
  attempts: number;
  token: string;
  /** Pending: due. Processing: lease end. Completed: forgotten after. Dead: when it died. */
  dueAt: number;
  updatedAt: number;
  lastError: string | undefined;
  /** Durable steps' results by name, from the first until completion. */
  steps?: Map<string, string> | undefined;
}

const EMPTY_STEPS: ReadonlyMap<string, string> = new Map();
const stepsSize = (steps: Map<string, string> | undefined) => {
  let n = 0;
  if (steps) for (const [name, value] of steps) n += name.length + value.length;
  return n;
};

/** The bytes an entry's delivery holds: its body, header names and values, and URL. */
function sizeOf(delivery: InboxDelivery | undefined): number {
  if (!delivery) return 0;
  let n = delivery.body.byteLength + (delivery.url?.length ?? 0);
  for (const [name, value] of delivery.headers) n += name.length + value.length;
  return n;
}

/** The entry's view, without its delivery. */
function view(e: Entry): InboxEntryView {
  return {
    key: e.key,
    receiver: e.receiver,
    state: e.state,
    type: e.type,
    id: e.id,
    attempts: e.attempts,
    acceptedAt: new Date(e.acceptedAt),
    dueAt: new Date(e.dueAt),
    updatedAt: new Date(e.updatedAt),
    lastError: e.lastError,
    hasBody: e.delivery !== undefined,
  };
}

/** The job a take hands over: the delivery and the entry's details, under the entry's new lease. */
function jobOf(e: Entry, takenOver: boolean): InboxJob {
  const delivery = e.delivery as InboxDelivery;
  return {
    ...delivery,
    key: e.key,
    receiver: e.receiver,
    type: e.type,
    id: e.id,
    item: e.item,
    fingerprint: e.fingerprint,
    acceptedAt: new Date(e.acceptedAt),
    takenOver,
    lease: createLease({
      key: e.key,
      token: e.token,
      attempt: e.attempts,
      fingerprint: e.fingerprint,
      expiresAt: new Date(e.dueAt),
    }),
  };
}

const rank = (s: InboxState) => (s === 'dead' ? 0 : s === 'pending' ? 1 : s === 'processing' ? 2 : 3);

/**
 * An inbox in this process's memory, on the clock `now`, holding at most `maxEntries` entries and
 * `maxBytes` of deliveries: past either, `accept` throws {@link StoreFullError} (503 `store_full`,
 * the sender retries), having first forgotten the completed entries whose retention ran out. Dead
 * entries and completed ones within their retention count: they are kept on purpose.
 */
export function memoryInbox(
  now: () => number,
  bounds: { maxEntries: number; maxBytes: number } = { maxEntries: 100_000, maxBytes: 256 * 1024 * 1024 },
): InboxStore {
  // A plain object of its own methods, as before the class: a copy by spread keeps them all.
  return plainInbox(new MemoryInbox(now, bounds));
}

/** The memory inbox's entries and the bytes they hold. */
class MemoryInbox implements InboxStore {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  // Entries a worker may have to take (pending or processing): `take` scans only these.
  private readonly active = new Set<string>();

  constructor(
    private readonly now: () => number,
    private readonly bounds: { maxEntries: number; maxBytes: number },
  ) {}

  /** The clock's reading; the clock is called as a plain function, never as a method of this. */
  private time(): number {
    return this.now.call(undefined);
  }

  /** The entry a lease still owns (processing, same token), or undefined. */
  private owned(lease: Lease): Entry | undefined {
    const e = this.entries.get(lease.key);
    return e && e.state === 'processing' && e.token === lease.token && lease.token !== '' ? e : undefined;
  }

  private forget(key: string, e: Entry): void {
    this.entries.delete(key);
    this.bytes -= sizeOf(e.delivery) + stepsSize(e.steps);
  }

  /** The steps of the lease's entry: see StepStore. */
  readonly steps = {
    load: async (lease: Lease): Promise<ReadonlyMap<string, string>> => {
      const steps = this.entries.get(lease.key)?.steps;
      return steps ? new Map(steps) : EMPTY_STEPS;
    },
    save: async (lease: Lease, name: string, value: string): Promise<boolean> => {
      const e = this.owned(lease);
      if (!e) return false;
      e.steps ??= new Map();
      const before = e.steps.get(name);
      const grows = name.length + value.length - (before === undefined ? 0 : name.length + before.length);
      if (this.bytes + grows > this.bounds.maxBytes) throw new StoreFullError(this.bounds.maxBytes, 'bytes');
      e.steps.set(name, value);
      this.bytes += grows;
      return true;
    },
  };

  private forgetExpired(at: number): void {
    for (const [key, e] of this.entries) if (e.state === 'completed' && e.dueAt <= at) this.forget(key, e);
  }

  /** Room for one more entry of `size` bytes, or StoreFullError; forgets what ran out first if needed. */
  private makeRoom(size: number, at: number, replacing: Entry | undefined): void {
    const { bounds } = this;
    const fits = () =>
      this.entries.size - (replacing ? 1 : 0) < bounds.maxEntries &&
      this.bytes - sizeOf(replacing?.delivery) + size <= bounds.maxBytes;
    if (fits()) return;
    this.forgetExpired(at);
    if (fits()) return;
    throw this.entries.size - (replacing ? 1 : 0) >= bounds.maxEntries
      ? new StoreFullError(bounds.maxEntries)
      : new StoreFullError(bounds.maxBytes, 'bytes');
  }

  async accept(input: InboxAcceptInput, options: InboxAcceptOptions = {}): Promise<InboxAccepted> {
    const at = this.time();
    const held = this.entries.get(input.key);
    if (held && !(held.state === 'completed' && held.dueAt <= at)) {
      return held.fingerprint === input.fingerprint
        ? { status: 'duplicate', state: held.state }
        : { status: 'conflict', state: held.state };
    }
    const claiming = options.claimMs !== undefined;
    const delivery: InboxDelivery = {
      body: input.body,
      headers: input.headers.map(([n, v]) => [n, v] as const),
      url: input.url,
      receivedAt: input.receivedAt,
    };
    const size = sizeOf(delivery);
    this.makeRoom(size, at, held && this.entries.get(input.key) === held ? held : undefined);
    if (held && this.entries.get(input.key) === held) this.forget(input.key, held);
    const entry: Entry = {
      key: input.key,
      receiver: input.receiver,
      state: claiming ? 'processing' : 'pending',
      type: input.type,
      id: input.id,
      item: input.item,
      fingerprint: input.fingerprint,
      delivery,
      acceptedAt: at,
      attempts: claiming ? 1 : 0,
      token: claiming ? newToken() : '',
      dueAt: claiming ? at + (options.claimMs ?? 0) : at,
      updatedAt: at,
      lastError: undefined,
    };
    this.entries.set(input.key, entry);
    this.bytes += size;
    this.active.add(input.key);
    if (!claiming) return { status: 'accepted' };
    return {
      status: 'accepted',
      lease: createLease({
        key: entry.key,
        token: entry.token,
        attempt: 1,
        fingerprint: entry.fingerprint,
        expiresAt: new Date(entry.dueAt),
      }),
    };
  }

  async take({ limit, leaseMs, receiver }: InboxTakeOptions): Promise<InboxJob[]> {
    const at = this.time();
    const due: Entry[] = [];
    for (const key of this.active) {
      const e = this.entries.get(key);
      if (!e || (e.state !== 'pending' && e.state !== 'processing')) {
        this.active.delete(key);
        continue;
      }
      if (e.dueAt > at || (receiver !== undefined && e.receiver !== receiver) || !e.delivery) continue;
      due.push(e);
    }
    due.sort((a, b) => a.dueAt - b.dueAt);
    return due.slice(0, Math.max(0, limit)).map((e) => {
      const takenOver = e.state === 'processing';
      e.state = 'processing';
      e.attempts += 1;
      e.token = newToken();
      e.dueAt = at + leaseMs;
      e.updatedAt = at;
      return jobOf(e, takenOver);
    });
  }

  async extend(lease: Lease, { leaseMs }: { leaseMs: number }): Promise<boolean> {
    const e = this.owned(lease);
    if (!e) return false;
    const at = this.time();
    e.dueAt = at + leaseMs;
    e.updatedAt = at;
    return true;
  }

  async complete(lease: Lease, { retentionMs, dropBody }: { retentionMs: number; dropBody?: boolean }) {
    const e = this.owned(lease);
    if (!e) return false;
    const at = this.time();
    e.state = 'completed';
    e.dueAt = at + retentionMs;
    e.updatedAt = at;
    // Completed: the entry never runs again, and its steps go.
    this.bytes -= stepsSize(e.steps);
    e.steps = undefined;
    if (dropBody) {
      this.bytes -= sizeOf(e.delivery);
      e.delivery = undefined;
    }
    this.active.delete(e.key);
    return true;
  }

  async retry(lease: Lease, { delayMs, error }: { delayMs: number; error: string }): Promise<boolean> {
    const e = this.owned(lease);
    if (!e) return false;
    const at = this.time();
    e.state = 'pending';
    e.token = '';
    e.dueAt = at + delayMs;
    e.updatedAt = at;
    e.lastError = inboxErrorLine(error);
    return true;
  }

  async bury(lease: Lease, { error }: { error: string }): Promise<boolean> {
    const e = this.owned(lease);
    if (!e) return false;
    const at = this.time();
    e.state = 'dead';
    e.token = '';
    e.dueAt = at;
    e.updatedAt = at;
    e.lastError = inboxErrorLine(error);
    this.active.delete(e.key);
    return true;
  }

  async stats(options: { receiver?: string } = {}): Promise<InboxStats> {
    const at = this.time();
    const counts = { pending: 0, processing: 0, completed: 0, dead: 0, scheduled: 0 };
    let oldestDue = at;
    for (const e of this.entries.values()) {
      if (options.receiver !== undefined && e.receiver !== options.receiver) continue;
      if (e.state === 'completed' && e.dueAt <= at) continue;
      counts[e.state]++;
      if (e.state === 'pending' && e.dueAt > at) counts.scheduled++;
      const waiting = e.state === 'pending' || (e.state === 'processing' && e.dueAt <= at);
      if (waiting && e.dueAt <= at) oldestDue = Math.min(oldestDue, e.dueAt);
    }
    return { ...counts, oldestDueMs: at - oldestDue };
  }

  async list(options: InboxListOptions = {}): Promise<InboxEntryView[]> {
    const at = this.time();
    const start = positionAfter(options.after, 'memoryStore') + (options.offset ?? 0);
    return [...this.entries.values()]
      .filter(
        (e) =>
          !(e.state === 'completed' && e.dueAt <= at) &&
          (options.state === undefined || e.state === options.state) &&
          (options.receiver === undefined || e.receiver === options.receiver),
      )
      .sort((a, b) => rank(a.state) - rank(b.state) || a.dueAt - b.dueAt)
      .slice(start, start + (options.limit ?? 100))
      .map((e, i) => ({ ...view(e), cursor: positionCursor(start + i + 1) }));
  }

  async get(key: string) {
    const e = this.entries.get(key);
    if (!e || (e.state === 'completed' && e.dueAt <= this.time())) return undefined;
    return { ...view(e), delivery: e.delivery };
  }

  async requeue(target: { key: string } | { dead: true; receiver?: string }): Promise<number> {
    const at = this.time();
    const wake = (e: Entry) => {
      e.state = 'pending';
      e.dueAt = at;
      e.updatedAt = at;
      this.active.add(e.key);
    };
    if ('key' in target) {
      const e = this.entries.get(target.key);
      const waiting = e?.state === 'pending' && e.dueAt > at;
      if (!e || !(e.state === 'dead' || waiting) || !e.delivery) return 0;
      wake(e);
      return 1;
    }
    let n = 0;
    for (const e of this.entries.values()) {
      if (e.state !== 'dead' || !e.delivery) continue;
      if (target.receiver !== undefined && e.receiver !== target.receiver) continue;
      wake(e);
      n++;
    }
    return n;
  }

  async purge(): Promise<number> {
    const before = this.entries.size;
    this.forgetExpired(this.time());
    return before - this.entries.size;
  }
}
