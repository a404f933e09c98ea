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
import { createHash } from 'node:crypto';
import { ConfigError } from '../../core/errors.js';
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
import { inboxErrorLine, isStoredDelivery, unreadableJob } from '../../core/inbox.js';
import { keyPart, storeKey } from '../../core/keys.js';
import { createLease, type Lease } from '../../core/types.js';
import {
  INBOX_ACCEPT,
  INBOX_BURY,
  INBOX_COMPLETE,
  INBOX_EXTEND,
  INBOX_GET,
  INBOX_LIST,
  INBOX_PEEK,
  INBOX_PURGE,
  INBOX_REQUEUE_DEAD,
  INBOX_REQUEUE_ONE,
  INBOX_RETRY,
  INBOX_STATS,
  INBOX_TAKE,
} from './inbox-scripts.js';

export interface InboxScript {
  readonly body: string;
  readonly sha: string;
}

/** How the inbox talks to the client: replies keep bulk strings as Buffers (bodies are bytes). */
export interface InboxWire {
  /** EVALSHA (EVAL on NOSCRIPT) over keys of one slot, sent to the node of the first. */
  script(s: InboxScript, keys: string[], args: (string | Buffer)[]): Promise<unknown>;
  /** One command on the node that holds `key`. */
  command(key: string, args: string[]): Promise<unknown>;
}

export interface RedisInboxDeps {
  wire: InboxWire;
  prefix: string;
  /** The store's error mapping (unreachable, refused, misconfigured). */
  failure(what: string, err: unknown): Error;
  /** Called after every answer (the store's one-time start-up checks). */
  answered(): void;
  newToken(): string;
}

function script(body: string): InboxScript {
  return { body, sha: createHash('sha1').update(body).digest('hex') };
}

const s = {
  accept: script(INBOX_ACCEPT),
  take: script(INBOX_TAKE),
  peek: script(INBOX_PEEK),
  extend: script(INBOX_EXTEND),
  get: script(INBOX_GET),
  complete: script(INBOX_COMPLETE),
  retry: script(INBOX_RETRY),
  bury: script(INBOX_BURY),
  requeueOne: script(INBOX_REQUEUE_ONE),
  requeueDead: script(INBOX_REQUEUE_DEAD),
  stats: script(INBOX_STATS),
  list: script(INBOX_LIST),
  purge: script(INBOX_PURGE),
};

// Lua formats numbers with 14 significant digits: durations stay below 1e13 ms.
const MAX_MS = 1e13;
const SPACE = /^([A-Za-z0-9][A-Za-z0-9._-]{0,63}):/;
const STATES: Record<string, InboxState> = { p: 'pending', r: 'processing', c: 'completed', d: 'dead' };
const LETTERS: Record<InboxState, string> = { pending: 'p', processing: 'r', completed: 'c', dead: 'd' };
const RANK: Record<InboxState, number> = { dead: 0, pending: 1, processing: 2, completed: 3 };

/** The key space of a key: its part before the first `:` when that is a valid space name, else `~`. */
export function spaceOf(key: string): string {
  return SPACE.exec(key)?.[1] ?? '~';
}

/** The space a receiver's own keys (`<receiver>:...`) live in. */
const homeOf = (receiver: string) => spaceOf(`${receiver}:`);

function ms(value: number, name: string, min: number): number {
  if (!Number.isFinite(value) || value < min || value > MAX_MS) {
    throw new ConfigError(
      'invalid_duration',
      `onceonly: redisStore inbox ${name} must be between ${min} ms and ${MAX_MS} ms, got ${value}`,
    );
  }
  return Math.ceil(value);
}

function text(value: unknown): string {
  if (value instanceof Uint8Array)
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString();
  return String(value);
}

const optional = (value: unknown) => (value === null || value === undefined ? undefined : text(value));

function binary(value: unknown): Buffer {
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  throw new ConfigError(
    'invalid_option',
    "onceonly: redisStore's inbox got a delivery back as text, not bytes: the client must hand bulk replies back as Buffers when asked (node-redis sendCommand with a typeMapping in v5 or returnBuffers in v4, ioredis evalshaBuffer); a wrapper around the client must pass those through",
  );
}

interface Queue {
  readonly space: string;
  readonly receiver: string;
  readonly base: string;
  /** The receiver as it appears in key names. */
  readonly part: string;
}

/** The delivery as stored: JSON [headers, url, receivedAt], a newline, the body's bytes. */
function packDelivery(input: InboxDelivery): Buffer {
  const head = Buffer.from(
    `${JSON.stringify([input.headers, input.url ?? null, input.receivedAt.getTime()])}\n`,
  );
  const body = input.body;
  return Buffer.concat([head, Buffer.from(body.buffer, body.byteOffset, body.byteLength)]);
}

function unpackDelivery(value: unknown): InboxDelivery {
  const packed = binary(value);
  const cut = packed.indexOf(10);
  if (cut < 0) throw new Error('its delivery has no JSON head');
  const head: unknown = JSON.parse(packed.toString('utf8', 0, cut));
  if (!isStoredDelivery(head)) throw new Error('its delivery head is not [headers, url, receivedAt]');
  const [headers, url, receivedAt] = head;
  // A copy: the reply's buffer may be a slice of a larger one.
  const body = new Uint8Array(packed.subarray(cut + 1));
  return { body, headers, url: url ?? undefined, receivedAt: new Date(receivedAt) };
}

/** The delivery for a view: none when it was changed outside onceonly (a take buries it). */
function readableDelivery(value: unknown): InboxDelivery | undefined {
  try {
    return unpackDelivery(value);
  } catch {
    return undefined;
  }
}

/** The optional fields of an entry, JSON-encoded (lossless for any string), only when present. */
function optionalFields(input: InboxAcceptInput, sk: string, part: string): string[] {
  const out: string[] = [];
  if (input.type !== undefined) out.push('ty', JSON.stringify(input.type));
  if (input.id !== undefined) out.push('id', JSON.stringify(input.id));
  if (input.item !== undefined) out.push('it', JSON.stringify(input.item));
  if (input.key !== sk) out.push('k', JSON.stringify(input.key));
  if (input.receiver !== part) out.push('r', JSON.stringify(input.receiver));
  return out;
}

/** An entry's fields as the scripts return them (`viewFields` in redis/inbox-scripts.ts). */
interface Fields {
  state: InboxState;
  attempts: number;
  acceptedAt: number;
  due: number;
  updatedAt: number;
  lastError: string | undefined;
  fingerprint: string;
  key: string;
  receiver: string;
  type: string | undefined;
  id: string | undefined;
  item: string | undefined;
}

const json = (value: unknown) =>
  value === null || value === undefined ? undefined : (JSON.parse(text(value)) as string);

/** For views: a field that is not JSON (changed outside onceonly) shown as it is stored. */
const shown = (value: unknown) => {
  try {
    return json(value);
  } catch {
    return text(value);
  }
};

const present = (value: unknown) => value !== null && value !== undefined;

function fields(sk: unknown, f: unknown[], read: (value: unknown) => string | undefined = json): Fields {
  const acceptedAt = Number(text(f[3]));
  return {
    state: STATES[text(f[0])] ?? 'pending',
    // A plain accept leaves out n, d and u until the entry first changes: 0, a, a.
    attempts: present(f[2]) ? Number(text(f[2])) : 0,
    acceptedAt,
    due: present(f[4]) ? Number(text(f[4])) : acceptedAt,
    updatedAt: present(f[5]) ? Number(text(f[5])) : acceptedAt,
    lastError: optional(f[6]),
    fingerprint: text(f[7]),
    key: read(f[9]) ?? text(sk),
    receiver: read(f[10]) ?? text(f[8]),
    type: read(f[11]),
    id: read(f[12]),
    item: read(f[13]),
  };
}

function view(f: Fields, hasBody: boolean): InboxEntryView {
  return {
    key: f.key,
    receiver: f.receiver,
    state: f.state,
    type: f.type,
    id: f.id,
    attempts: f.attempts,
    acceptedAt: new Date(f.acceptedAt),
    dueAt: new Date(f.due),
    updatedAt: new Date(f.updatedAt),
    lastError: f.lastError,
    hasBody,
  };
}

/** The inbox of a Redis store: see the module comment for its layout. */
export function redisInbox(deps: RedisInboxDeps): InboxStore {
  const { wire, prefix } = deps;
  const registry = `${prefix}i:queues`;
  const baseOf = (space: string) => `${prefix}i:{${space}}:`;
  const queue = (space: string, receiver: string): Queue => ({
    space,
    receiver,
    base: baseOf(space),
    part: keyPart(receiver),
  });
  const anchor = (key: string) => `${baseOf(spaceOf(key))}n`;
  const entryKey = (key: string) => `${baseOf(spaceOf(key))}e:${storeKey(key)}`;
  const deliveryKey = (key: string) => `${baseOf(spaceOf(key))}b:${storeKey(key)}`;
  const set = (q: Queue, letter: 'p' | 'r' | 'c' | 'x' | 'f') => `${q.base}${letter}:${q.part}`;

  // Pairs this store object has written to the registries: each is written once, before its first
  // entry, so every entry is reachable from them.
  const registered = new Set<string>();
  // The key names of each unreadable job's lease: its key as given may be the damaged part, and the
  // stored key it falls back to names no entry once run through storeKey and spaceOf again.
  const namesOf = new WeakMap<Lease, string[]>();
  // The other spaces of each receiver, as its last take read them.
  const foreign = new Map<string, string[]>();

  async function run(what: string, script: InboxScript, keys: string[], args: (string | Buffer)[]) {
    let reply: unknown;
    try {
      reply = await wire.script(script, keys, args);
    } catch (err) {
      throw deps.failure(what, err);
    }
    deps.answered();
    return reply;
  }

  async function command(what: string, key: string, args: string[]) {
    try {
      return await wire.command(key, args);
    } catch (err) {
      throw deps.failure(what, err);
    }
  }

  async function register(q: Queue): Promise<void> {
    const id = JSON.stringify([q.space, q.receiver]);
    if (registered.has(id)) return;
    const writes = [command('accept', registry, ['SADD', registry, id])];
    const home = queue(homeOf(q.receiver), q.receiver);
    if (q.space !== home.space)
      writes.push(command('accept', set(home, 'f'), ['SADD', set(home, 'f'), q.space]));
    await Promise.all(writes);
    registered.add(id);
  }

  async function allQueues(what: string): Promise<Queue[]> {
    const members = (await command(what, registry, ['SMEMBERS', registry])) as unknown[];
    return members.map((m) => {
      const [space, receiver] = JSON.parse(text(m)) as [string, string];
      return queue(space, receiver);
    });
  }

  /** A receiver's queues: its own space's, then any other its entries are under. */
  async function queuesOf(what: string, receiver: string | undefined): Promise<Queue[]> {
    if (receiver === undefined) return allQueues(what);
    const home = queue(homeOf(receiver), receiver);
    const others = (await command(what, set(home, 'f'), ['SMEMBERS', set(home, 'f')])) as unknown[];
    return [home, ...others.map((o) => queue(text(o), receiver))];
  }

  function lease(key: string, token: string, attempt: number, fingerprint: string, expiresAt: number): Lease {
    return createLease({ key, token, attempt, fingerprint, expiresAt: new Date(expiresAt) });
  }

  /** Takes up to `limit` due entries of one queue. */
  async function takeFrom(
    q: Queue,
    limit: number,
    leaseMs: number,
  ): Promise<{ jobs: (InboxJob & { due: number })[]; spaces: string[] }> {
    const tokens = Array.from({ length: limit }, () => deps.newToken());
    const reply = (await run(
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
        namesOf.set(held, [`${q.base}n`, `${q.base}e:${text(sk)}`, `${q.base}b:${text(sk)}`]);
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
  async function takeMerged(queues: Queue[], limit: number, leaseMs: number): Promise<InboxJob[]> {
    if (queues.length === 0) return [];
    if (queues.length === 1) return strip((await takeFrom(queues[0]!, limit, leaseMs)).jobs);
    const peeks = await Promise.all(
      queues.map(async (q) => {
        const reply = (await run(
          'take',
          s.peek,
          [`${q.base}n`, set(q, 'p'), set(q, 'r'), set(q, 'f')],
          [String(limit)],
        )) as [unknown[], unknown[]];
        if (q.space === homeOf(q.receiver)) foreign.set(q.receiver, reply[0].map(text));
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
    const taken = await Promise.all([...counts].map(([q, n]) => takeFrom(q, n, leaseMs)));
    return strip(taken.flatMap((t) => t.jobs).sort((a, b) => a.due - b.due));
  }

  const strip = (jobs: (InboxJob & { due: number })[]): InboxJob[] => jobs.map(({ due: _, ...job }) => job);

  /** An owner-checked change of one entry: 1 from the script when the lease still owned it. */
  async function owned(what: string, script: InboxScript, held: Lease, args: string[]): Promise<boolean> {
    if (held.token === '') return false;
    const names = namesOf.get(held) ?? [anchor(held.key), entryKey(held.key), deliveryKey(held.key)];
    const reply = await run(what, script, names, [held.token, ...args]);
    return Number(reply) === 1;
  }

  return {
    async accept(input: InboxAcceptInput, options: InboxAcceptOptions = {}): Promise<InboxAccepted> {
      const claimMs = options.claimMs === undefined ? undefined : ms(options.claimMs, 'claimMs', 1);
      const token = claimMs === undefined ? '' : deps.newToken();
      const q = queue(spaceOf(input.key), input.receiver);
      await register(q);
      const sk = storeKey(input.key);
      const reply = (await run(
        'accept',
        s.accept,
        [`${q.base}n`, entryKey(input.key), deliveryKey(input.key), set(q, 'p'), set(q, 'r')],
        [
          q.part,
          input.fingerprint,
          packDelivery(input),
          sk,
          claimMs === undefined ? '' : String(claimMs),
          token,
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
    },

    async take({ limit, leaseMs, receiver }: InboxTakeOptions): Promise<InboxJob[]> {
      const n = Math.floor(limit);
      if (!(n > 0)) return [];
      const leaseFor = ms(leaseMs, 'leaseMs', 1);
      if (receiver === undefined) return takeMerged(await allQueues('take'), n, leaseFor);
      const home = queue(homeOf(receiver), receiver);
      let known = foreign.get(receiver);
      if (known === undefined) {
        // Once per receiver and store object; every take's reply refreshes it.
        known = ((await command('take', set(home, 'f'), ['SMEMBERS', set(home, 'f')])) as unknown[]).map(
          text,
        );
        foreign.set(receiver, known);
      }
      if (known.length > 0) {
        return takeMerged([home, ...known.map((space) => queue(space, receiver))], n, leaseFor);
      }
      // The common case: a receiver's entries are all under its own name, one script. Its reply
      // names any other space that appeared since: those are taken from at once and merged from
      // the next take on.
      const { jobs, spaces } = await takeFrom(home, n, leaseFor);
      foreign.set(receiver, spaces);
      if (spaces.length === 0 || jobs.length >= n) return strip(jobs);
      const more = await takeMerged(
        spaces.map((space) => queue(space, receiver)),
        n - jobs.length,
        leaseFor,
      );
      return [...strip(jobs), ...more];
    },

    extend: (held, { leaseMs }) => owned('extend', s.extend, held, [String(ms(leaseMs, 'leaseMs', 1))]),

    complete: (held, { retentionMs, dropBody }) =>
      owned('complete', s.complete, held, [String(ms(retentionMs, 'retentionMs', 1)), dropBody ? '1' : '']),

    retry: (held, { delayMs, error }) =>
      owned('retry', s.retry, held, [String(ms(delayMs, 'delayMs', 0)), inboxErrorLine(error)]),

    bury: (held, { error }) => owned('bury', s.bury, held, [inboxErrorLine(error)]),

    async stats(options: { receiver?: string } = {}): Promise<InboxStats> {
      const queues = await queuesOf('stats', options.receiver);
      const replies = await Promise.all(
        queues.map(
          (q) =>
            run(
              'stats',
              s.stats,
              [`${q.base}n`, set(q, 'p'), set(q, 'r'), set(q, 'c'), set(q, 'x')],
              [],
            ) as Promise<unknown[]>,
        ),
      );
      const total = { pending: 0, processing: 0, completed: 0, dead: 0, oldestDueMs: 0 };
      for (const r of replies) {
        total.pending += Number(r[0]);
        total.processing += Number(r[1]);
        total.completed += Number(r[2]);
        total.dead += Number(r[3]);
        total.oldestDueMs = Math.max(total.oldestDueMs, Number(r[4]));
      }
      return total;
    },

    async list(options: InboxListOptions = {}): Promise<InboxEntryView[]> {
      const limit = Math.max(0, Math.floor(options.limit ?? 100));
      if (limit === 0) return [];
      const queues = await queuesOf('list', options.receiver);
      const only = options.state === undefined ? '' : LETTERS[options.state];
      const rows = await Promise.all(
        queues.map(
          (q) =>
            run(
              'list',
              s.list,
              [`${q.base}n`, set(q, 'x'), set(q, 'p'), set(q, 'r'), set(q, 'c')],
              [only, String(limit)],
            ) as Promise<unknown[][]>,
        ),
      );
      return rows
        .flat()
        .map(([sk, hasBody, ...rest]) => view(fields(sk, rest, shown), Number(hasBody) === 1))
        .sort((a, b) => RANK[a.state] - RANK[b.state] || a.dueAt.getTime() - b.dueAt.getTime())
        .slice(0, limit);
    },

    async get(key: string) {
      const reply = (await run('get', s.get, [anchor(key), entryKey(key), deliveryKey(key)], [])) as
        | unknown[]
        | null;
      if (!reply) return undefined;
      const [delivery, ...rest] = reply;
      const hasBody = delivery !== null && delivery !== undefined;
      return {
        ...view(fields(storeKey(key), rest, shown), hasBody),
        delivery: hasBody ? readableDelivery(delivery) : undefined,
      };
    },

    async requeue(target: { key: string } | { dead: true; receiver?: string }): Promise<number> {
      if ('key' in target) {
        return Number(
          await run(
            'requeue',
            s.requeueOne,
            [anchor(target.key), entryKey(target.key), deliveryKey(target.key)],
            [],
          ),
        );
      }
      let total = 0;
      for (const q of await queuesOf('requeue', target.receiver)) {
        const batch = 500;
        let skip = 0;
        for (;;) {
          const [moved, kept, seen] = (
            (await run(
              'requeue',
              s.requeueDead,
              [`${q.base}n`, set(q, 'x'), set(q, 'p')],
              [String(batch), String(skip)],
            )) as unknown[]
          ).map(Number) as [number, number, number];
          total += moved;
          skip += kept;
          if (seen < batch) break;
        }
      }
      return total;
    },

    async purge(options: { batchSize?: number } = {}): Promise<number> {
      const batch = Math.min(1000, Math.max(1, Math.floor(options.batchSize ?? 1000)));
      let total = 0;
      for (const q of await allQueues('purge')) {
        for (;;) {
          const n = Number(await run('purge', s.purge, [`${q.base}n`, set(q, 'c')], [String(batch)]));
          total += n;
          if (n < batch) break;
        }
      }
      return total;
    },
  };
}
