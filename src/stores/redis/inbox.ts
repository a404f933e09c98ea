/**
 * The Redis store's inbox (`redisStore(...).inbox`), over the same client, standalone or Cluster.
 *
 * Layout. Entries are grouped in queues, one per key space and receiver: the key space is what a
 * key holds before its first `:` (the receiver's name for every key a receiver writes:
 * `stripe:evt_1`), or `~` for keys of another shape. Every key of one space carries the hash tag
 * `{space}`, so one space, which is one receiver's whole inbox, lives in one Cluster slot, and every
 * operation is one script over keys of that slot:
 *
 * - `<prefix>i:{space}:e:<key>`: the entry, a hash of short fields (state, owner, attempts, times:
 *   see redis/inbox-scripts.ts), small enough for Redis's compact encoding;
 * - `<prefix>i:{space}:b:<key>`: its delivery (headers, url, receivedAt, and the body's exact
 *   bytes), a string: deleted when a completed entry drops its body;
 * - `<prefix>i:{space}:s:<key>`: its durable steps, a hash, until it completes;
 * - `<prefix>i:{space}:p:<receiver>` / `r:` / `c:` / `x:`: sorted sets of its pending entries by due
 *   time, processing ones by lease end (so one whose lease ran out is due again), completed ones by
 *   the end of their retention, dead ones by when they died;
 * - `<prefix>i:{space}:n`: the space's acceptance counter (ties between equal due times go by it);
 * - `<prefix>i:{space}:f:<receiver>`: the other spaces a receiver has entries under (only for keys
 *   that do not start with the receiver's own name: never for the receiver's keys);
 * - `<prefix>i:queues`: every (space, receiver) pair, for the operations over all receivers.
 *
 * Since the slot follows from the key alone, `get`, `extend`, `complete`... need nothing but the key:
 * no index to read first, nothing to keep in step. `take` of a receiver runs on its own space and
 * learns any other space from the same reply. Time is the server's (`TIME` in every script).
 */
import type {
  InboxAccepted,
  InboxAcceptInput,
  InboxAcceptOptions,
  InboxEntryView,
  InboxJob,
  InboxListOptions,
  InboxStats,
  InboxStore,
  InboxTakeOptions,
  InboxWatcher,
} from '../../core/inbox.js';
import { inboxErrorLine, positionAfter, positionCursor, unreadableJob } from '../../core/inbox.js';
import { keyPart, storeKey } from '../../core/keys.js';
import { createLease, type Lease } from '../../core/types.js';
import type { WatchHub } from '../inbox-watch.js';
import { completeBySpace } from './inbox-many.js';
import { inboxScripts as s } from './inbox-scripts.js';
import {
  fields,
  homeOf,
  json,
  LETTERS,
  ms,
  optionalFields,
  packDelivery,
  type Queue,
  RANK,
  readableDelivery,
  STATES,
  shown,
  spaceOf,
  text,
  unpackDelivery,
  view,
} from './inbox-values.js';
import type { Script } from './scripts.js';
import { redisSteps } from './steps.js';
import type { InboxWire } from './wire.js';

export { spaceOf } from './inbox-values.js';

export interface RedisInboxDeps {
  wire: InboxWire;
  prefix: string;
  /** The store's error mapping (unreachable, refused, misconfigured). */
  failure(what: string, err: unknown): Error;
  /** Called after every answer (the store's one-time start-up checks). */
  answered(): void;
  newToken(): string;
  /** The channel the scripts publish due entries on (see watch.ts). */
  channel: string;
  /** The store's watch over that channel, when its client can subscribe. */
  hub?: WatchHub | undefined;
}

/** The inbox of a Redis store: see the module comment for its layout. */
export function redisInbox(deps: RedisInboxDeps): InboxStore {
  return new RedisInbox(deps);
}

const set = (q: Queue, letter: 'p' | 'r' | 'c' | 'x' | 'f') => `${q.base}${letter}:${q.part}`;
const strip = (jobs: (InboxJob & { due: number })[]): InboxJob[] => jobs.map(({ due: _, ...job }) => job);
const lease = (key: string, token: string, attempt: number, fingerprint: string, expiresAt: number): Lease =>
  createLease({ key, token, attempt, fingerprint, expiresAt: new Date(expiresAt) });

class RedisInbox implements InboxStore {
  readonly #deps: RedisInboxDeps;
  readonly #prefix: string;
  readonly #registry: string;
  // Pairs this store object has written to the registries: each is written once, before its first
  // entry, so every entry is reachable from them.
  readonly #registered = new Set<string>();
  // The key names of each unreadable job's lease: its key as given may be the damaged part, and the
  // stored key it falls back to names no entry once run through storeKey and spaceOf again.
  readonly #namesOf = new WeakMap<Lease, string[]>();
  // The other spaces of each receiver, as its last take read them.
  readonly #foreign = new Map<string, string[]>();
  /** See {@link InboxStore.watch}: the messages name a receiver's key part. */
  readonly watch?: (receiver: string | undefined, watcher: InboxWatcher) => () => void;

  constructor(deps: RedisInboxDeps) {
    this.#deps = deps;
    this.#prefix = deps.prefix;
    this.#registry = `${deps.prefix}i:queues`;
    const hub = deps.hub;
    if (hub) this.watch = (receiver, watcher) => hub.watch(receiver && keyPart(receiver), watcher);
  }

  #baseOf(space: string): string {
    return `${this.#prefix}i:{${space}}:`;
  }

  #queue(space: string, receiver: string): Queue {
    return { space, receiver, base: this.#baseOf(space), part: keyPart(receiver) };
  }

  /** The keys of one entry, first in every script of one entry: anchor, entry, delivery, steps. */
  #names(key: string): string[] {
    const base = this.#baseOf(spaceOf(key));
    const sk = storeKey(key);
    return [`${base}n`, `${base}e:${sk}`, `${base}b:${sk}`, `${base}s:${sk}`];
  }

  async #run(what: string, script: Script, keys: string[], args: (string | Buffer)[]): Promise<unknown> {
    let reply: unknown;
    try {
      reply = await this.#deps.wire.script(script, keys, args);
    } catch (err) {
      throw this.#deps.failure(what, err);
    }
    this.#deps.answered();
    return reply;
  }

  async #command(what: string, key: string, args: string[]): Promise<unknown> {
    try {
      return await this.#deps.wire.command(key, args);
    } catch (err) {
      throw this.#deps.failure(what, err);
    }
  }

  async #register(q: Queue): Promise<void> {
    const id = JSON.stringify([q.space, q.receiver]);
    if (this.#registered.has(id)) return;
    const registry = this.#registry;
    const writes = [this.#command('accept', registry, ['SADD', registry, id])];
    const home = this.#queue(homeOf(q.receiver), q.receiver);
    if (q.space !== home.space)
      writes.push(this.#command('accept', set(home, 'f'), ['SADD', set(home, 'f'), q.space]));
    await Promise.all(writes);
    this.#registered.add(id);
  }

  async #allQueues(what: string): Promise<Queue[]> {
    const registry = this.#registry;
    const members = (await this.#command(what, registry, ['SMEMBERS', registry])) as unknown[];
    return members.map((m) => {
      const [space, receiver] = JSON.parse(text(m)) as [string, string];
      return this.#queue(space, receiver);
    });
  }

  /** A receiver's queues: its own space's, then any other its entries are under. */
  async #queuesOf(what: string, receiver: string | undefined): Promise<Queue[]> {
    if (receiver === undefined) return this.#allQueues(what);
    const home = this.#queue(homeOf(receiver), receiver);
    const others = (await this.#command(what, set(home, 'f'), ['SMEMBERS', set(home, 'f')])) as unknown[];
    return [home, ...others.map((o) => this.#queue(text(o), receiver))];
  }

  /** Takes up to `limit` due entries of one queue. */
  async #takeFrom(
    q: Queue,
    limit: number,
    leaseMs: number,
  ): Promise<{ jobs: (InboxJob & { due: number })[]; spaces: string[] }> {
    const tokens = Array.from({ length: limit }, () => this.#deps.newToken());
    const reply = (await this.#run(
      'take',
      s.take,
      [`${q.base}n`, set(q, 'p'), set(q, 'r'), set(q, 'f')],
      [String(limit), String(leaseMs), ...tokens],
    )) as [unknown, unknown[], unknown[][]];
    const expiresAt = Number(reply[0]);
    const jobs = reply[2].map(([sk, due, delivery, token, was, ...rest]): InboxJob & { due: number } => {
      // Taken from the processing set: the run before it ended without a verdict.
      const takenOver = text(was) === 'r';
      try {
        if (text(was) === 'x') throw new Error('its state, acceptance number or attempt count was damaged');
        const f = fields(sk, rest);
        return {
          ...unpackDelivery(delivery),
          key: f.key,
          receiver: f.receiver,
          type: f.type,
          id: f.id,
          item: f.item,
          fingerprint: f.fingerprint,
          acceptedAt: new Date(f.acceptedAt),
          takenOver,
          lease: lease(f.key, text(token), f.attempts, f.fingerprint, expiresAt),
          due: Number(text(due)),
        };
      } catch (error) {
        // Changed or damaged outside onceonly: handed out as unreadable (the worker buries it,
        // reported) so the rest of the take runs; keyed by what can still be read of it.
        const readable = <T>(read: () => T, fallback: T): T => {
          try {
            return read();
          } catch {
            return fallback;
          }
        };
        const key = readable(() => json(rest[9]) ?? text(sk), text(sk));
        const fingerprint = readable(() => text(rest[7]), '');
        const acceptedAt = new Date(readable(() => Number(text(rest[3])), 0));
        const held = lease(key, text(token), Number(text(rest[2] ?? '0')), fingerprint, expiresAt);
        const named = (letter: string) => `${q.base}${letter}:${text(sk)}`;
        this.#namesOf.set(held, [`${q.base}n`, named('e'), named('b'), named('s')]);
        return {
          ...unreadableJob(
            {
              key,
              receiver: readable(() => json(rest[10]) ?? text(rest[8]), q.receiver),
              fingerprint,
              acceptedAt,
              lease: held,
            },
            error,
          ),
          due: Number(text(due)),
        };
      }
    });
    return { jobs, spaces: reply[1].map(text) };
  }

  /**
   * Takes from several queues, oldest due first over all of them: reads the first `limit` due
   * entries of each, then takes from each queue as many as it has among the oldest `limit`.
   */
  async #takeMerged(queues: Queue[], limit: number, leaseMs: number): Promise<InboxJob[]> {
    if (queues.length === 0) return [];
    if (queues.length === 1) return strip((await this.#takeFrom(queues[0]!, limit, leaseMs)).jobs);
    const peeks = await Promise.all(
      queues.map(async (q) => {
        const reply = (await this.#run(
          'take',
          s.peek,
          [`${q.base}n`, set(q, 'p'), set(q, 'r'), set(q, 'f')],
          [String(limit)],
        )) as [unknown[], unknown[]];
        if (q.space === homeOf(q.receiver)) this.#foreign.set(q.receiver, reply[0].map(text));
        const due: { q: Queue; at: number }[] = [];
        for (let i = 0; i + 1 < reply[1].length; i += 2) due.push({ q, at: Number(text(reply[1][i + 1])) });
        return due;
      }),
    );
    const oldest = peeks
      .flat()
      .sort((a, b) => a.at - b.at)
      .slice(0, limit);
    const counts = new Map<Queue, number>();
    for (const { q } of oldest) counts.set(q, (counts.get(q) ?? 0) + 1);
    const taken = await Promise.all([...counts].map(([q, n]) => this.#takeFrom(q, n, leaseMs)));
    return strip(taken.flatMap((t) => t.jobs).sort((a, b) => a.due - b.due));
  }

  /** A script over the keys of a lease's entry: anchor, entry, delivery, steps. */
  #onEntry(what: string, script: Script, held: Lease, args: string[]): Promise<unknown> {
    return this.#run(what, script, this.#namesOf.get(held) ?? this.#names(held.key), args);
  }

  /** An owner-checked change of one entry: 1 from the script when the lease still owned it. */
  async #owned(what: string, script: Script, held: Lease, args: string[]): Promise<boolean> {
    if (held.token === '') return false;
    return Number(await this.#onEntry(what, script, held, [held.token, ...args])) === 1;
  }

  /** The steps of a lease's entry (see steps.ts). */
  readonly steps = redisSteps({
    save: s.saveStep,
    load: s.loadSteps,
    owner: (held) => (held.token === '' ? undefined : held.token),
    run: (what, script, held, args) => this.#onEntry(what, script, held, args),
  });

  async accept(input: InboxAcceptInput, options: InboxAcceptOptions = {}): Promise<InboxAccepted> {
    const claimMs = options.claimMs === undefined ? undefined : ms(options.claimMs, 'claimMs', 1);
    const token = claimMs === undefined ? '' : this.#deps.newToken();
    const q = this.#queue(spaceOf(input.key), input.receiver);
    await this.#register(q);
    const sk = storeKey(input.key);
    const reply = (await this.#run(
      'accept',
      s.accept,
      [...this.#names(input.key), set(q, 'p'), set(q, 'r')],
      [
        q.part,
        input.fingerprint,
        packDelivery(input),
        sk,
        claimMs === undefined ? '' : String(claimMs),
        token,
        this.#deps.channel,
        ...optionalFields(input, sk, q.part),
      ],
    )) as [unknown, unknown];
    const status = Number(reply[0]);
    if (status === 0) {
      if (claimMs === undefined) return { status: 'accepted' };
      return {
        status: 'accepted',
        lease: lease(input.key, token, 1, input.fingerprint, Number(text(reply[1]))),
      };
    }
    const state = STATES[text(reply[1])] ?? 'pending';
    return status === 1 ? { status: 'duplicate', state } : { status: 'conflict', state };
  }

  async take({ limit, leaseMs, receiver }: InboxTakeOptions): Promise<InboxJob[]> {
    const n = Math.floor(limit);
    if (!(n > 0)) return [];
    const leaseFor = ms(leaseMs, 'leaseMs', 1);
    if (receiver === undefined) return this.#takeMerged(await this.#allQueues('take'), n, leaseFor);
    const home = this.#queue(homeOf(receiver), receiver);
    let known = this.#foreign.get(receiver);
    if (known === undefined) {
      // Once per receiver and store object; every take's reply refreshes it.
      known = ((await this.#command('take', set(home, 'f'), ['SMEMBERS', set(home, 'f')])) as unknown[]).map(
        text,
      );
      this.#foreign.set(receiver, known);
    }
    if (known.length > 0) {
      return this.#takeMerged([home, ...known.map((space) => this.#queue(space, receiver))], n, leaseFor);
    }
    // The common case: a receiver's entries are all under its own name, one script. Its reply
    // names any other space that appeared since: those are taken from at once and merged from
    // the next take on.
    const { jobs, spaces } = await this.#takeFrom(home, n, leaseFor);
    this.#foreign.set(receiver, spaces);
    if (spaces.length === 0 || jobs.length >= n) return strip(jobs);
    const more = await this.#takeMerged(
      spaces.map((space) => this.#queue(space, receiver)),
      n - jobs.length,
      leaseFor,
    );
    return [...strip(jobs), ...more];
  }

  extend(held: Lease, { leaseMs }: { leaseMs: number }): Promise<boolean> {
    return this.#owned('extend', s.extend, held, [String(ms(leaseMs, 'leaseMs', 1))]);
  }

  complete(
    held: Lease,
    { retentionMs, dropBody }: { retentionMs: number; dropBody?: boolean },
  ): Promise<boolean> {
    return this.#owned('complete', s.complete, held, [
      String(ms(retentionMs, 'retentionMs', 1)),
      dropBody ? '1' : '',
    ]);
  }

  completeMany(helds: readonly Lease[], o: { retentionMs: number; dropBody?: boolean }): Promise<boolean[]> {
    const args = [String(ms(o.retentionMs, 'retentionMs', 1)), o.dropBody ? '1' : ''];
    return completeBySpace(
      helds,
      (h) => this.#namesOf.get(h) ?? this.#names(h.key),
      (keys, tokens) => this.#run('complete', s.completeMany, keys, [...args, ...tokens]),
    );
  }

  retry(held: Lease, { delayMs, error }: { delayMs: number; error: string }): Promise<boolean> {
    return this.#owned('retry', s.retry, held, [
      String(ms(delayMs, 'delayMs', 0)),
      inboxErrorLine(error),
      this.#deps.channel,
    ]);
  }

  bury(held: Lease, { error }: { error: string }): Promise<boolean> {
    return this.#owned('bury', s.bury, held, [inboxErrorLine(error)]);
  }

  async stats(options: { receiver?: string } = {}): Promise<InboxStats> {
    const queues = await this.#queuesOf('stats', options.receiver);
    const replies = await Promise.all(
      queues.map(
        (q) =>
          this.#run(
            'stats',
            s.stats,
            [`${q.base}n`, set(q, 'p'), set(q, 'r'), set(q, 'c'), set(q, 'x')],
            [],
          ) as Promise<unknown[]>,
      ),
    );
    const total = { pending: 0, processing: 0, completed: 0, dead: 0, scheduled: 0, oldestDueMs: 0 };
    for (const r of replies) {
      total.scheduled += Number(r[5]);
      total.pending += Number(r[0]);
      total.processing += Number(r[1]);
      total.completed += Number(r[2]);
      total.dead += Number(r[3]);
      total.oldestDueMs = Math.max(total.oldestDueMs, Number(r[4]));
    }
    return total;
  }

  async list(options: InboxListOptions = {}): Promise<InboxEntryView[]> {
    const limit = Math.max(0, Math.floor(options.limit ?? 100));
    const offset = positionAfter(options.after, 'redisStore') + Math.max(0, Math.floor(options.offset ?? 0));
    if (limit === 0) return [];
    const queues = await this.#queuesOf('list', options.receiver);
    const only = options.state === undefined ? '' : LETTERS[options.state];
    // One queue (a receiver's) skips on the server; several are merged here, each read from its start.
    const [skip, want] = queues.length === 1 ? [offset, limit] : [0, offset + limit];
    const rows = await Promise.all(
      queues.map(
        (q) =>
          this.#run(
            'list',
            s.list,
            [`${q.base}n`, set(q, 'x'), set(q, 'p'), set(q, 'r'), set(q, 'c')],
            [only, String(want), String(skip)],
          ) as Promise<unknown[][]>,
      ),
    );
    return rows
      .flat()
      .map(([sk, hasBody, ...rest]) => view(fields(sk, rest, shown), Number(hasBody) === 1))
      .sort((a, b) => RANK[a.state] - RANK[b.state] || a.dueAt.getTime() - b.dueAt.getTime())
      .slice(offset - skip, offset - skip + limit)
      .map((entry, i) => ({ ...entry, cursor: positionCursor(offset + i + 1) }));
  }

  async get(key: string) {
    const reply = (await this.#run('get', s.get, this.#names(key), [])) as unknown[] | null;
    if (!reply) return undefined;
    const [delivery, ...rest] = reply;
    const hasBody = delivery !== null && delivery !== undefined;
    return {
      ...view(fields(storeKey(key), rest, shown), hasBody),
      delivery: hasBody ? readableDelivery(delivery) : undefined,
    };
  }

  async requeue(target: { key: string } | { dead: true; receiver?: string }): Promise<number> {
    if ('key' in target) {
      return Number(await this.#run('requeue', s.requeueOne, this.#names(target.key), [this.#deps.channel]));
    }
    let total = 0;
    for (const q of await this.#queuesOf('requeue', target.receiver)) {
      const batch = 500;
      let skip = 0;
      for (;;) {
        const [moved, kept, seen] = (
          (await this.#run(
            'requeue',
            s.requeueDead,
            [`${q.base}n`, set(q, 'x'), set(q, 'p')],
            [String(batch), String(skip), this.#deps.channel],
          )) as unknown[]
        ).map(Number) as [number, number, number];
        total += moved;
        skip += kept;
        if (seen < batch) break;
      }
    }
    return total;
  }

  async purge(options: { batchSize?: number } = {}): Promise<number> {
    const batch = Math.min(1000, Math.max(1, Math.floor(options.batchSize ?? 1000)));
    let total = 0;
    for (const q of await this.#allQueues('purge')) {
      for (;;) {
        const n = Number(await this.#run('purge', s.purge, [`${q.base}n`, set(q, 'c')], [String(batch)]));
        total += n;
        if (n < batch) break;
      }
    }
    return total;
  }
}
