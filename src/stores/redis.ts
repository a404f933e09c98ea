/**
 * `onceonly/redis`: a store on Redis (or Valkey), through the node-redis or ioredis client you
 * already have, standalone or cluster. Only the clients' shapes are used: neither package is
 * imported at run time.
 */
import { createHash } from 'node:crypto';
import { newToken } from '../core/crypto.js';
import { type Duration, parsePositiveDuration } from '../core/duration.js';
import type { HealthCheck, StoreHealth } from '../core/health.js';
import { storeKey } from '../core/keys.js';
import { confirmMarginMs, leaseNow } from '../core/timers.js';
import {
  assertVersion,
  type Claim,
  type ClaimOptions,
  createLease,
  type Lease,
  markBuiltin,
  type RecordOptions,
  type RecordView,
  type Store,
} from '../core/types.js';
import { ConfigError, StoreMisconfiguredError, StoreUnavailableError } from '../errors.js';
import { type InboxWire, redisInbox } from './redis/inbox.js';
import { ADVANCE, CLAIM, CONFIRM, EXTEND, INSPECT, RECORD, RELEASE } from './redis/scripts.js';

/**
 * The part of a node-redis (`redis` v5+) client or cluster the store uses: `createClient()`,
 * `createCluster()`. Commands go through `sendCommand` (the typed helpers cost more per call than
 * the command itself); `evalSha` only tells a node-redis client from an ioredis one.
 */
export interface NodeRedisLike {
  evalSha(sha1: string, options: { keys: string[]; arguments: string[] }): PromiseLike<unknown>;
  /** A client's `sendCommand(args)`, or a cluster's `sendCommand(firstKey, isReadonly, args)`. */
  sendCommand(...args: never[]): PromiseLike<unknown>;
}

/** The part of an ioredis client or cluster the store uses: `new Redis()`, `new Cluster()`. */
export interface IoRedisLike {
  evalsha(sha1: string, numkeys: number, ...args: string[]): PromiseLike<unknown>;
  eval(script: string, numkeys: number, ...args: string[]): PromiseLike<unknown>;
  call(command: string, ...args: string[]): PromiseLike<unknown>;
  /** The inbox's: replies with bulk strings as Buffers (an inbox body is bytes). */
  evalshaBuffer?(sha1: string, numkeys: number, ...args: (string | Buffer)[]): PromiseLike<unknown>;
  evalBuffer?(script: string, numkeys: number, ...args: (string | Buffer)[]): PromiseLike<unknown>;
}

/** A node-redis or ioredis client, standalone or cluster; Valkey servers work with either. */
export type RedisClientLike = NodeRedisLike | IoRedisLike;

export interface RedisStoreOptions {
  /**
   * Your connected client: node-redis `createClient()` / `createCluster()` (v5+, after `connect()`)
   * or ioredis `new Redis()` / `new Cluster()`. The store never connects, quits or reconfigures it.
   * Set it up to fail fast through an outage (no offline queue, an `'error'` listener): see
   * `checkOfflineQueue` and "Outages" in docs/redis.md.
   * @example
   * const client = createClient({
   *   url: process.env.REDIS_URL,
   *   disableOfflineQueue: true,
   *   socket: { reconnectStrategy: (retries) => Math.min(100 * 2 ** retries, 2_000) },
   * });
   * client.on('error', (err) => console.error('redis:', err.message));
   * redisStore({ client: await client.connect() })
   */
  client: RedisClientLike;
  /**
   * Prepended to every key: claims live at `${prefix}k:${key}`, ordering-guard versions at
   * `${prefix}v:${entity}`, the inbox under `${prefix}i:{space}:` (one hash tag per key space, so
   * one receiver's inbox is one slot; see "Inbox" in docs/redis.md). Keep braces out of it on Redis
   * Cluster unless you want every key in one slot.
   * @default 'onceonly:'
   * @example
   * redisStore({ client, prefix: 'billing:webhooks:' })
   */
  prefix?: string;
  /**
   * How long a claim key outlives its lease when the claim gives no `retentionMs` (the store uses the
   * longer of this and the lease); a claim's `retentionMs`, which the receiver passes, replaces it.
   * A delivery that takes over within this window after a crash or a release gets `attempt` + 1;
   * after it the key is gone and the next claim starts again at attempt 1. Costs memory only for
   * leases that ran out (crashed processes) and released ones (failed handlers).
   * @default '1h'
   * @example
   * redisStore({ client, leaseGrace: '6h' })
   */
  leaseGrace?: Duration;
  /**
   * Where warnings go: the start-up checks that the client fails fast through an outage
   * (`checkOfflineQueue`) and that `maxmemory-policy` cannot evict keys (`checkEvictionPolicy`).
   * @default console.warn
   * @example
   * redisStore({ client, onWarning: (message) => logger.warn(message) })
   */
  onWarning?: (message: string) => void;
  /**
   * Reads `CONFIG GET maxmemory*` once, after the first command, and warns when the server may evict
   * keys. A server that refuses CONFIG (managed services often do) is not an error.
   * @default true
   * @example
   * redisStore({ client, checkEvictionPolicy: false })
   */
  checkEvictionPolicy?: boolean;
  /**
   * Reads the client's own options once, at construction (no command is sent), and warns when the
   * client would hold commands through an outage: a node-redis client or cluster without
   * `disableOfflineQueue: true`, an ioredis client with `enableOfflineQueue` on or
   * `maxRetriesPerRequest` above 1 (or null), an ioredis Cluster with `enableOfflineQueue` on. Such
   * commands wait for the reconnect instead of failing, and can reach Redis long after their delivery
   * gave up. Also warns when a node-redis client or cluster has no `'error'` listener: node-redis emits
   * `'error'` whenever the connection drops, and an unhandled one ends the process. A client shape it
   * does not know (a wrapper) is not checked. See "Outages" in docs/redis.md.
   * @default true
   * @example
   * redisStore({ client, checkOfflineQueue: false })
   */
  checkOfflineQueue?: boolean;
}

const DEFAULT_PREFIX = 'onceonly:';
const DEFAULT_GRACE = '1h';
// Lua formats numbers with 14 significant digits, so every duration handed to a script stays below
// 1e13 ms (about 300 years) and is passed as a decimal string built here.
const MAX_MS = 1e13;
/** How often the server's clock is read again (one `TIME`, in a claim's round trip). */
const CLOCK_REFRESH_MS = 10_000;
/**
 * How far past the latest the server's now can be (this process's reading of its clock plus that
 * reading's round trip) the lease end a token carries must lie for a claim to answer "in flight" on
 * it alone: room for the clocks' rates to differ. Nearer the end, the claim asks the key's `PTTL`.
 */
const LIVE_MARGIN_MS = 1_000;
/** How far this host's wall and monotonic clocks may part before its reading of the server's is redone. */
const CLOCK_PARTED_MS = 100;
/** The lease end after a token's owner id: decimal ms on the server's clock. */
const TOKEN_END = /^[0-9a-f]+\.(\d{1,15})$/;

/**
 * Connection changes (connected, reconnecting, closed) per client that tells them by events, counted
 * once per emitter however many stores and proxies share it.
 */
const connectionChanges = new WeakMap<object, { count: number }>();
const CONNECTION_EVENTS = ['ready', 'reconnecting', 'end', 'close'] as const;

/**
 * How to tell that a client's connection changed since the store read the server's clock (a
 * reconnect may reach another server, after a failover), or undefined when the store cannot tell:
 * then no token carries a lease end and none is trusted. A node-redis 5 client counts its sockets
 * (`socketEpoch`); a node-redis 4 client and an ioredis client (not a cluster) tell by events. Pools,
 * sentinels, clusters and wrappers of any other shape carry no ends.
 */
function connectionCounter(client: object): (() => number) | undefined {
  try {
    const c = client as Record<string, unknown>;
    if (typeof c.execute === 'function' || typeof c.acquire === 'function') return undefined;
    if (typeof c.socketEpoch === 'number')
      return () => Number((client as { socketEpoch: unknown }).socketEpoch);
    const nodeRedis4 =
      typeof c.isReady === 'boolean' && typeof c.duplicate === 'function' && typeof c.evalSha === 'function';
    const ioredis = c.isCluster === false && typeof c.status === 'string';
    if (!nodeRedis4 && !ioredis) return undefined;
    // The emitter itself, below any proxies made with Object.create (node-redis withTypeMapping).
    let emitter: object | null = client;
    while (emitter !== null && !Object.hasOwn(emitter, '_events')) emitter = Object.getPrototypeOf(emitter);
    if (emitter === null) return undefined;
    const changes = connectionChanges.get(emitter) ?? countChanges(emitter);
    return () => changes.count;
  } catch {
    return undefined;
  }
}

/** Counts an emitter's connection changes from now on, once for every store and proxy over it. */
function countChanges(emitter: object): { count: number } {
  const changes = { count: 0 };
  const on = (emitter as { on: (event: string, listener: () => void) => unknown }).on;
  for (const event of CONNECTION_EVENTS)
    on.call(emitter, event, () => {
      changes.count++;
    });
  connectionChanges.set(emitter, changes);
  return changes;
}

/**
 * The owner id of a token (what the scripts compare): the token up to its `.`, or undefined for a
 * token no claim of this store made (empty, or with the field separator).
 */
function ownerId(token: string): string | undefined {
  const dot = token.indexOf('.');
  const id = dot === -1 ? token : token.slice(0, dot);
  return id === '' || id.includes('|') ? undefined : id;
}

/**
 * What `owned` says of the value a native confirm's SET found instead of the claim's: true when
 * that was the claim's own value (the SET completed it) or the owner's completed record (a repeated
 * confirm: answered without writing it again, so its retention counts from the first completion);
 * undefined when it is the owner's lease renewed, or a bare `OK` (a server that took IFEQ but not
 * GET): a second command decides; false for anything else (another owner, a released record, a
 * value onceonly did not write), as the script.
 */
function owned(was: string, id: string, claimed: string): boolean | undefined {
  if (was === claimed) return true;
  if (was === 'OK') return undefined;
  const state = was[0];
  const after = was[2 + id.length];
  if ((state !== 'p' && state !== 'c') || was[1] !== '|' || !was.startsWith(id, 2)) return false;
  if (after !== '|' && after !== '.') return false;
  return state === 'c' ? true : undefined;
}

/**
 * What a lease's claim wrote (none once renewed), and until when (on `leaseNow()`'s clock, which
 * counts a host's suspend) a command of its confirm may still be sent after another: the lease's
 * end as last claimed or renewed, less the engine's confirm margin.
 */
interface Written {
  value: string | undefined;
  bound: number;
}

/** Until when a confirm's later command may go out for a lease claimed or renewed at `sentAt` (`leaseNow()`). */
function confirmBound(sentAt: number, leaseMs: number): number {
  return sentAt + leaseMs - confirmMarginMs(leaseMs);
}

/** What a claim wrote, kept unless the server would answer it back changed (see LONE_SURROGATE). */
function claimWritten(value: string, fp: string, sentAt: number, leaseMs: number): Written {
  return { value: LONE_SURROGATE.test(fp) ? undefined : value, bound: confirmBound(sentAt, leaseMs) };
}

/** A confirm's second command would go out past its lease's end (see {@link Written}). */
function tooLate(what: string): StoreUnavailableError {
  return new StoreUnavailableError(
    `onceonly: Redis confirm could not finish before the lease's end: ${what}, and a second command now could land after the lease ran out`,
  );
}

/** Lone UTF-16 surrogates: a value holding one comes back from the server otherwise (U+FFFD). */
const LONE_SURROGATE = /[\ud800-\udfff]/;

/** A native confirm the server refused: the script answers instead. */
const REFUSED = Symbol('refused');

interface Script {
  body: string;
  sha: string;
}

function script(body: string): Script {
  return { body, sha: createHash('sha1').update(body).digest('hex') };
}

const scripts = {
  claim: script(CLAIM),
  confirm: script(CONFIRM),
  release: script(RELEASE),
  extend: script(EXTEND),
  record: script(RECORD),
  advance: script(ADVANCE),
  inspect: script(INSPECT),
};

/**
 * How the store talks to a client: each command on one key's node (and the inbox's), always as a
 * promise (see `attempt`).
 */
interface Wire extends InboxWire {
  /** A script by its SHA1 (EVALSHA); `call()` falls back to `eval` on NOSCRIPT. */
  evalsha(s: Script, key: string, args: string[]): Promise<unknown>;
  /** A script by its body (EVAL), which also caches it on the server. */
  eval(s: Script, key: string, args: string[]): Promise<unknown>;
  /** `SET key value NX PX px GET`: the value the key already held, or null when the SET won. */
  setNx(key: string, value: string, px: number): Promise<unknown>;
  /** `TIME` on the node that holds `key`: [seconds, microseconds]. */
  time(key: string): Promise<unknown>;
  /** `PTTL key`: the key's time to live in ms, -1 without one, -2 when it is gone. */
  pttl(key: string): Promise<unknown>;
  /**
   * `SET key value IFEQ expected PX px` (Valkey 8.1+, Redis 8.4+): `OK` when the key held exactly
   * `expected`, else null; a server without IFEQ answers a syntax error. With `get`, the same SET
   * with GET: the value the key held (set only if that was `expected`), or null when it had none.
   */
  setIfEq(key: string, value: string, expected: string, px: string, get?: boolean): Promise<unknown>;
  /** A Redis Cluster client: its nodes' clocks are several, and `TIME` reads one of them. */
  readonly cluster: boolean;
}

/**
 * An error the server answered: Redis error replies start with an upper-case code (ERR, OOM,
 * LOADING, BUSY, READONLY...); the clients' own errors (refused, closed, offline, retries
 * exhausted) do not.
 */
function serverError(err: unknown): boolean {
  return /^[A-Z][A-Z_-]+\b/.test(err instanceof Error ? err.message : String(err));
}

/**
 * A command's promise, however the client answers: a thenable is made a promise, and a client (a
 * wrapper, a circuit breaker) that refuses the command by throwing at once gives a rejected one, so
 * every caller maps it like any other failure. Every command of the wire goes through here.
 */
function attempt(send: () => PromiseLike<unknown>): Promise<unknown> {
  try {
    return Promise.resolve(send());
  } catch (err) {
    return Promise.reject(err);
  }
}

function isNoScript(err: unknown): boolean {
  return err instanceof Error && err.message.includes('NOSCRIPT');
}

interface NodeRedisClusterLike {
  masters?: unknown;
  nodeClient?: unknown;
  sendCommand(
    firstKey: string,
    isReadonly: boolean,
    args: (string | Buffer)[],
    options?: object,
  ): PromiseLike<unknown>;
}

// Command options that hand bulk strings back as Buffers: node-redis v5 reads `typeMapping`
// (RESP_TYPES.BLOB_STRING is 36, '$'), v4 reads `returnBuffers` and ignores the other. The inbox's
// replies carry bodies, which are bytes.
const BUFFERS = { typeMapping: { 36: Buffer }, returnBuffers: true };

function ioBuffers(): never {
  throw new ConfigError(
    'invalid_option',
    "onceonly: redisStore's inbox needs the ioredis client's evalshaBuffer and evalBuffer (ioredis 5 or later)",
  );
}

function adapt(client: RedisClientLike): Wire {
  if (typeof (client as NodeRedisLike).evalSha === 'function') {
    const cluster = client as unknown as NodeRedisClusterLike;
    const isCluster = Array.isArray(cluster.masters) && typeof cluster.nodeClient === 'function';
    // A cluster routes by the key given first; a client takes the arguments alone.
    const send: (key: string, args: string[]) => Promise<unknown> = isCluster
      ? (key, args) => attempt(() => cluster.sendCommand(key, false, args))
      : (_key, args) =>
          attempt(() =>
            (client as unknown as { sendCommand(a: string[]): PromiseLike<unknown> }).sendCommand(args),
          );
    const sendBuffers: (key: string, args: (string | Buffer)[]) => Promise<unknown> = isCluster
      ? (key, args) => attempt(() => cluster.sendCommand(key, false, args, BUFFERS))
      : (_key, args) =>
          attempt(() =>
            (
              client as unknown as { sendCommand(a: (string | Buffer)[], o: object): PromiseLike<unknown> }
            ).sendCommand(args, BUFFERS),
          );
    return {
      cluster: isCluster,
      evalsha: (s, key, args) => send(key, ['EVALSHA', s.sha, '1', key, ...args]),
      eval: (s, key, args) => send(key, ['EVAL', s.body, '1', key, ...args]),
      setNx: (key, value, px) => send(key, ['SET', key, value, 'NX', 'PX', String(px), 'GET']),
      time: (key) => send(key, ['TIME']),
      pttl: (key) => send(key, ['PTTL', key]),
      setIfEq: (key, value, expected, px, get) =>
        send(key, ['SET', key, value, 'IFEQ', expected, 'PX', px, ...(get ? ['GET'] : [])]),
      script: (s, keys, args) =>
        sendBuffers(keys[0]!, ['EVALSHA', s.sha, String(keys.length), ...keys, ...args]).catch(
          (err: unknown) => {
            if (!isNoScript(err)) throw err;
            return sendBuffers(keys[0]!, ['EVAL', s.body, String(keys.length), ...keys, ...args]);
          },
        ),
      command: (key, args) => sendBuffers(key, args),
    };
  }
  if (typeof (client as IoRedisLike).evalsha === 'function') {
    const c = client as IoRedisLike;
    return {
      cluster: (client as { isCluster?: unknown }).isCluster === true,
      evalsha: (s, key, args) => attempt(() => c.evalsha(s.sha, 1, key, ...args)),
      eval: (s, key, args) => attempt(() => c.eval(s.body, 1, key, ...args)),
      setNx: (key, value, px) => attempt(() => c.call('SET', key, value, 'PX', String(px), 'NX', 'GET')),
      time: () => attempt(() => c.call('TIME')),
      pttl: (key) => attempt(() => c.call('PTTL', key)),
      setIfEq: (key, value, expected, px, get) =>
        attempt(() => c.call('SET', key, value, 'IFEQ', expected, 'PX', px, ...(get ? ['GET'] : []))),
      script: async (s, keys, args) => {
        if (!c.evalshaBuffer || !c.evalBuffer) return ioBuffers();
        try {
          return await c.evalshaBuffer(s.sha, keys.length, ...keys, ...args);
        } catch (err) {
          if (!isNoScript(err)) throw err;
          return c.evalBuffer(s.body, keys.length, ...keys, ...args);
        }
      },
      // The inbox's plain commands (SADD, SMEMBERS) reply with integers and names, so `call` serves:
      // `callBuffer` must not be used, because with `enableAutoPipelining` ioredis (5 and 6) queues it
      // without its command name (only `call` gets the name put back), and the server answers
      // "unknown command '<key>'".
      command: (_key, [name, ...args]) => attempt(() => c.call(name!, ...args)),
    };
  }
  throw new ConfigError(
    'invalid_option',
    'onceonly: redisStore needs a node-redis client (createClient or createCluster, v5 or later) or an ioredis client (Redis or Cluster) as `client`',
  );
}

function duration(value: number, name: string): number {
  if (!Number.isFinite(value) || value < 1 || value > MAX_MS) {
    throw new ConfigError(
      'invalid_duration',
      `onceonly: redisStore ${name} must be between 1 ms and ${MAX_MS} ms, got ${value}`,
    );
  }
  return Math.ceil(value);
}

const fingerprintField = (fingerprint: string | undefined) =>
  fingerprint === undefined ? '' : `=${fingerprint}`;

/** Stored and offered fingerprint fields match when equal or when either side has none (''). */
/**
 * A claim key's value, `state|token|attempt|graceMs|ttlMs|fingerprint field` (see redis/scripts.ts),
 * as the store reads it: [1] state (`p` or `c`), [2] token, [3] attempt, [4] grace, [5] ttl,
 * [6] fingerprint field.
 */
const VALUE = /^([pc])\|([^|]*)\|(\d+)\|(\d+)\|(\d+)\|(.*)$/s;

const sameField = (stored: string, offered: string) => stored === '' || offered === '' || stored === offered;

/**
 * A store on Redis or Valkey, for node-redis (v5+) and ioredis clients, standalone or Redis Cluster.
 * Claiming a free key is one command: a plain `SET NX PX` (with `GET`, so a completed key is
 * answered in the same trip); the lease's end is the server's time, read with `TIME` every few
 * seconds in a claim's round trip. A live lease found by that SET is told by the lease end its
 * token carries (or, without one, by one `PTTL`); only a released or run-out key needs the claim
 * script (takeover or in-flight). Confirm, release, extend,
 * record and advance are owner-checked scripts (EVALSHA, falling back to EVAL on NOSCRIPT); on a
 * server with `SET ... IFEQ` (Valkey 8.1+, Redis 8.4+) a confirm is that one command. Every
 * command acts on one key, so it runs on Redis Cluster, and all time is the server's. `store.inbox`
 * is the inbox for receivers in inbox mode: each of its operations is one script over the keys of
 * one hash tag (see redis/inbox.ts and "Inbox" in docs/redis.md).
 *
 * Run the server with `maxmemory-policy noeviction`: an evicted key lets a duplicate through. The
 * store warns at start-up otherwise. See docs/redis.md.
 *
 * Give it a client that fails fast while Redis is away (no offline queue) and has an `'error'`
 * listener; the store warns at start-up otherwise. See "Outages" in docs/redis.md.
 *
 * @example
 * import { createClient } from 'redis';
 * import { redisStore } from 'onceonly/redis';
 * const client = createClient({
 *   url: process.env.REDIS_URL,
 *   disableOfflineQueue: true, // while disconnected, fail at once: never queue
 *   pingInterval: 500,
 *   socket: { reconnectStrategy: (retries) => Math.min(100 * 2 ** retries, 2_000), socketTimeout: 1_000 },
 * });
 * client.on('error', (err) => console.error('redis:', err.message)); // unhandled, it ends the process
 * const store = redisStore({ client: await client.connect() });
 *
 * @example
 * import { Redis } from 'ioredis';
 * const client = new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379', {
 *   enableOfflineQueue: false,
 *   maxRetriesPerRequest: 0,
 *   retryStrategy: (times) => Math.min(50 * 2 ** times, 2_000),
 *   socketTimeout: 1_000,
 *   lazyConnect: true,
 * });
 * client.on('error', (err) => console.error('redis:', err.message));
 * await client.connect();
 * const store = redisStore({ client, prefix: 'shop:' });
 */
export function redisStore(options: RedisStoreOptions): Store {
  if (!options || typeof options !== 'object' || !options.client) {
    throw new ConfigError(
      'invalid_option',
      'onceonly: redisStore needs { client }: a connected node-redis or ioredis client',
    );
  }
  const { client } = options;
  const wire = adapt(client);
  // SET NX together with GET needs Redis 7 / Valkey 7.2; on older servers every claim is a script.
  let fastClaims = true;
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  if (typeof prefix !== 'string') {
    throw new ConfigError('invalid_option', 'onceonly: redisStore prefix must be a string');
  }
  const minGraceMs = parsePositiveDuration(options.leaseGrace ?? DEFAULT_GRACE, 'leaseGrace');
  const warn = options.onWarning ?? ((message: string) => console.warn(message));
  if (options.checkOfflineQueue !== false) checkOfflineQueue(client, warn);
  let policyChecked = options.checkEvictionPolicy === false;

  // Any string is a key: long or unprintable ones are hashed losslessly (core/keys.ts), so two
  // ids UTF-8 would merge (lone surrogates) stay two keys, as on every store.
  const claimKey = (key: string) => `${prefix}k:${storeKey(key)}`;
  const versionKey = (entity: string) => `${prefix}v:${storeKey(entity)}`;

  // Native compare-and-set (`SET ... IFEQ`: Valkey 8.1+, Redis 8.4+), asked of the server once, with
  // the first claim (or after the first answer to anything else): until it answers, and on a server
  // without it, confirm runs the Lua script, which makes the same comparison first.
  // With it, a confirm is one plain SET that completes the key only if it still holds exactly the
  // value this lease's claim wrote (kept per lease here), and answers what the key held: any other
  // value is decided from that answer (taken over, released, confirmed already), or by the script
  // while the lease is surely live (gone, renewed).
  // The answer holds for the connection it came on: after a reconnect (a failover may reach another
  // server, or a proxy in front of one) the server is asked again, and confirms run the script
  // until it answers.
  let nativeCas: boolean | undefined;
  let casProbe: Promise<void> | undefined;
  let casRetryAt = 0;
  let casConnection = 0;
  const written = new WeakMap<Lease, Written>();
  function probeCas(): Promise<void> {
    const askedOn = connectionCount?.() ?? 0;
    casProbe ??= wire
      .setIfEq(`${prefix}k:~cas-probe`, '~', '~ never held', '1000')
      .then(
        (reply) => {
          // Only nil says the server compared (the key does not exist). OK means it ignored IFEQ
          // and set the key (a proxy or a mock that drops options it does not know): a confirm
          // there would be an unconditional SET.
          nativeCas = reply === null || reply === undefined;
          casConnection = askedOn;
        },
        (err: unknown) => {
          // A server without IFEQ refuses the command: "ERR syntax error" (any ERR). A passing
          // reply (LOADING, OOM, BUSY, READONLY, MASTERDOWN, CLUSTERDOWN, TRYAGAIN...) or a
          // connection error says nothing: asked again at the next reading of the clock.
          if (serverError(err) && /^ERR\b/.test((err as Error).message)) {
            nativeCas = false;
            casConnection = askedOn;
          } else casRetryAt = performance.now() + CLOCK_REFRESH_MS;
        },
      )
      .finally(() => {
        casProbe = undefined;
      });
    return casProbe;
  }

  /**
   * The server's answer about IFEQ, if it was given on the client's present connection; when the
   * connection changed since, it is forgotten (undefined: the next claim asks again). A client whose
   * connection cannot be told (a cluster, a pool) keeps it: a node without IFEQ says so by a syntax
   * error.
   */
  function casAnswer(): boolean | undefined {
    if (connectionCount !== undefined && connectionCount() !== casConnection) nativeCas = undefined;
    return nativeCas;
  }

  function afterFirstAnswer(): void {
    if (casAnswer() === undefined && casProbe === undefined && performance.now() >= casRetryAt)
      void probeCas();
    if (!policyChecked) {
      policyChecked = true;
      // After the first answer, so a lazily connecting cluster client knows its nodes. Not awaited:
      // the check must never slow down or fail a delivery.
      checkEvictionPolicy(client, warn).catch(() => {});
    }
  }

  function failure(what: string, err: unknown): StoreUnavailableError {
    const message = err instanceof Error ? err.message : String(err);
    if (message.includes('ONCEONLY_FOREIGN')) {
      return new StoreMisconfiguredError(
        'store_foreign_value',
        `onceonly: the Redis key for ${what} holds a value onceonly did not write; give redisStore a prefix that nothing else writes under`,
        { cause: err },
      );
    }
    if (/^(WRONGPASS|NOAUTH)\b/.test(message)) {
      return new StoreMisconfiguredError(
        'store_auth_failed',
        `onceonly: Redis ${what} failed: the server refused the client's login (${message}); give the client the right username and password (redis://user:password@host, or ioredis's username and password options)`,
        { cause: err },
      );
    }
    // An ACL refusal: NOPERM for a command or a key, or (Redis 7.0) a command refused inside a script.
    if (/^NOPERM\b/.test(message) || /can't run this command or subcommand/.test(message)) {
      return new StoreMisconfiguredError(
        'store_permission_denied',
        `onceonly: Redis ${what} failed: the client's ACL user may not run a command or touch a key the store needs (${message}); allow them: ACL SETUSER <user> ~${prefix}* +get +set +del +pttl +time +eval +evalsha (the key pattern after any client keyPrefix; +config|get too for the eviction-policy check; the inbox also needs +hset +hmget +exists +incr +zadd +zrem +zrange +zrangebyscore +zcard +zcount +pexpire +sadd +smembers)`,
        { cause: err },
      );
    }
    // A server or proxy without scripting (some managed offerings and proxies disable EVAL): no
    // retry will help.
    if (
      /^ERR unknown command '?(EVALSHA|EVAL)\b/i.test(message) ||
      /^ERR .*scripting.*disabled/i.test(message)
    ) {
      return new StoreMisconfiguredError(
        'store_permission_denied',
        `onceonly: Redis ${what} failed: the server does not run Lua scripts (${message}); the store needs EVAL and EVALSHA: use a Redis (or Valkey) that allows them, or a proxy that passes them through`,
        { cause: err },
      );
    }
    if (serverError(err)) {
      return new StoreUnavailableError(
        `onceonly: Redis ${what} failed: the server answered an error (${message}); it may pass: if it persists, check the server's health and log`,
        { cause: err },
      );
    }
    return new StoreUnavailableError(
      `onceonly: Redis ${what} failed: the server could not be reached (${message}); check that the server is running and reachable from this process, and that the client is connected`,
      { cause: err },
    );
  }

  const answered = (reply: unknown) => {
    afterFirstAnswer();
    return reply;
  };

  /** A script by its body (EVAL): one command, whatever the server has loaded. */
  function byBody(what: string, s: Script, key: string, args: string[]): Promise<unknown> {
    return wire.eval(s, key, args).then(answered, (err: unknown) => {
      throw failure(what, err);
    });
  }

  /**
   * A script by EVALSHA; on NOSCRIPT (never loaded, SCRIPT FLUSH, failover) by EVAL, which caches
   * it. One handler pair on the common path: this runs for every confirm on Redis 7. The EVAL is a
   * second command, refused past `notAfter` (on `leaseNow()`'s clock) when one is given.
   */
  function call(what: string, s: Script, key: string, args: string[], notAfter?: number): Promise<unknown> {
    return wire.evalsha(s, key, args).then(answered, (err: unknown) => {
      if (!isNoScript(err)) throw failure(what, err);
      if (notAfter !== undefined && leaseNow() >= notAfter) {
        throw tooLate('the server had not loaded the confirm script (NOSCRIPT)');
      }
      return byBody(what, s, key, args);
    });
  }

  // The server's clock, carried on this process's monotonic clock: `TIME` is read now and then,
  // sent in the same tick as a claim's SET (so in its round trip), and a free key's lease end is
  // the server time the SET was sent at plus the lease. The offset is taken at the reply, so it is
  // never ahead of the server, and the lease end never later than the key's real one (it is earlier
  // by at most the SET's trip out plus the TIME reply's trip back). The process's own wall clock
  // plays no part.
  let clockOffset: number | undefined; // server ms minus performance.now()
  let clockReadAt = Number.NEGATIVE_INFINITY;
  let clockReading: Promise<void> | undefined;
  // How far behind the server's now the reading may be: its TIME's whole round trip as this process
  // saw it (an event-loop stall while the reply waited counts). And this host's wall clock at the
  // reading: a suspend stops the monotonic clock (not the server's), a step moves the wall clock,
  // and either shows as the two clocks parting.
  let clockSlack = Number.POSITIVE_INFINITY;
  let clockWallAt = 0;
  // The client's connection when the reading was asked for: a reading from before a reconnect may
  // be of another server's clock.
  const connectionCount = wire.cluster ? undefined : connectionCounter(client);
  let clockConnection = connectionCount?.() ?? 0;
  function readClock(key: string): Promise<void> {
    if (clockReading) return clockReading;
    const asked = performance.now();
    const askedOn = connectionCount?.() ?? 0;
    const time = wire.time(key);
    // The first reading also asks whether the server compares and sets natively: in the same trip
    // (and so does the first after a reconnect).
    if (casAnswer() === undefined && casProbe === undefined) void probeCas();
    clockReading = time
      .then(
        (reply) => {
          const at = performance.now();
          const [seconds, micros] = reply as [unknown, unknown];
          // String() first: a client with a typeMapping may hand back Buffers.
          const offset = Number(String(seconds)) * 1000 + Math.floor(Number(String(micros)) / 1000) - at;
          if (Number.isFinite(offset)) {
            clockOffset = offset;
            clockReadAt = at;
            clockSlack = at - asked;
            clockWallAt = Date.now();
            clockConnection = askedOn;
          }
        },
        () => {},
      )
      .finally(() => {
        clockReading = undefined;
      });
    return clockReading;
  }

  /**
   * Whether the client's connection is known to be the one the clock was read on; a reading from an
   * earlier connection is redone at the next claim and vouches for nothing meanwhile.
   */
  function sameConnection(): boolean {
    if (connectionCount === undefined) return false;
    if (connectionCount() === clockConnection) return true;
    clockReadAt = Number.NEGATIVE_INFINITY;
    return false;
  }

  /**
   * The latest the server's now can be, by this process's reading of its clock, to trust a lease
   * end another claim carried in its token; undefined when the reading cannot vouch for that: none
   * yet, older than two refresh periods, taken before the client's connection last changed, or this
   * host's wall and monotonic clocks have parted since (a suspend or a clock step); the clock is read
   * again at the next claim. On Redis Cluster ends are neither carried nor read (no connection count
   * is kept there): `TIME` reads one node's clock, not the key's.
   */
  function serverNowCeiling(now = performance.now()): number | undefined {
    if (clockOffset === undefined || !sameConnection()) return undefined;
    const since = now - clockReadAt;
    if (since > 2 * CLOCK_REFRESH_MS) return undefined;
    if (Math.abs(Date.now() - clockWallAt - since) > CLOCK_PARTED_MS) {
      clockReadAt = Number.NEGATIVE_INFINITY;
      return undefined;
    }
    return now + clockOffset + clockSlack;
  }

  /**
   * The claim of a key nobody holds: one plain SET NX PX, with GET so a completed key is answered in
   * the same trip, and a live lease by a PTTL. The claim script decides where this cannot (a
   * released or run-out key, or a server too old for SET NX GET).
   */
  async function fastClaim(
    userKey: string,
    token: string,
    g: number,
    fp: string,
    leaseMs: number,
    fingerprint: string | undefined,
  ): Promise<Claim> {
    const key = claimKey(userKey);
    // Read just before the SET goes out: the lease end it gives errs early, by no more than the
    // SET's trip out (a first claim's one-time costs before this point must not widen that).
    const sentAt = performance.now();
    const boundFrom = leaseNow();
    const clock = sentAt - clockReadAt > CLOCK_REFRESH_MS ? readClock(key) : undefined;
    const value = `p|${token}|1|${g}|${leaseMs + g}|${fp}`;
    let held: unknown;
    try {
      held = await wire.setNx(key, value, leaseMs + g);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (/syntax error/i.test(message)) {
        fastClaims = false;
        return scriptClaim(userKey, token, leaseMs, g, fp, fingerprint);
      }
      throw failure('claim', err);
    }
    afterFirstAnswer();
    if (held === null || held === undefined) {
      if (clockOffset === undefined) await clock;
      let expiresAt: number;
      if (clockOffset !== undefined) expiresAt = Math.floor(sentAt + clockOffset) + leaseMs;
      else {
        // TIME failed: the key is ours, ask a script for its expiry.
        const reply = (await call('claim', scripts.inspect, key, [])) as [string, number] | null;
        if (!reply) {
          throw new StoreUnavailableError(
            `onceonly: Redis claim failed: the key it had just claimed was gone at once; check the server's maxmemory-policy (noeviction) and what else deletes keys under the prefix`,
          );
        }
        expiresAt = Number(reply[1]) - g;
      }
      const lease = createLease({
        key: userKey,
        token,
        attempt: 1,
        fingerprint,
        expiresAt: new Date(expiresAt),
      });
      written.set(lease, claimWritten(value, fp, boundFrom, leaseMs));
      return { status: 'acquired', lease };
    }
    const fields = VALUE.exec(String(held));
    if (fields?.[1] === 'c') return { status: 'completed', sameFingerprint: sameField(fields[6]!, fp) };
    if (fields?.[1] === 'p') {
      const live = await liveLease(key, fields, fp);
      if (live) return live;
    }
    return scriptClaim(userKey, token, leaseMs, g, fp, fingerprint);
  }

  /** The claim script: takeover of a released or run-out key, or in flight, or completed. */
  async function scriptClaim(
    key: string,
    token: string,
    lease: number,
    g: number,
    fp: string,
    fingerprint: string | undefined,
  ): Promise<Claim> {
    const sentAt = leaseNow();
    const reply = (await call('claim', scripts.claim, claimKey(key), [
      token,
      String(lease),
      String(g),
      fp,
      String(lease + g),
    ])) as number[];
    const [status, a, b, c] = reply.map(Number);
    if (status === 1) {
      const acquired = createLease({ key, token, attempt: a!, fingerprint, expiresAt: new Date(b!) });
      // What the script wrote, field for field.
      written.set(acquired, claimWritten(`p|${token}|${a}|${g}|${lease + g}|${fp}`, fp, sentAt, lease));
      return { status: 'acquired', lease: acquired };
    }
    if (status === 2) {
      return { status: 'in-flight', attempt: a!, expiresAt: new Date(b!), sameFingerprint: c === 1 };
    }
    return { status: 'completed', sameFingerprint: a === 1 };
  }

  /**
   * A processing key found by the fast claim: in flight when its lease is live, told by the lease
   * end its token carries when that lies surely ahead, else by one PTTL
   * (live ⇔ PTTL > the grace it was written with, the script's own test) instead of the claim
   * script. Not atomic with the SET that read the value, so only "live" is concluded here, and every
   * way the key can change in between makes that answer late, never wrong in the costly direction:
   * a lease confirmed or taken over meanwhile is still reported in flight (the sender retries and
   * finds it done or running); a lease released or run out goes to the script, which decides on
   * the key as it is then. Undefined: let the script decide.
   */
  async function liveLease(key: string, fields: RegExpExecArray, fp: string): Promise<Claim | undefined> {
    // Released (no owner): the script takes it over or refuses it.
    if (fields[2] === '' || clockOffset === undefined) return undefined;
    // The lease end the claim wrote after its owner id: never later than the key's own, so a lease
    // whose end lies surely ahead of the server's now was live when the SET read it. No PTTL needed.
    const carried = TOKEN_END.exec(fields[2]!);
    const ceiling = carried ? serverNowCeiling() : undefined;
    if (carried && ceiling !== undefined) {
      const end = Number(carried[1]);
      if (end - ceiling > LIVE_MARGIN_MS) {
        return {
          status: 'in-flight',
          attempt: Number(fields[3]),
          expiresAt: new Date(end),
          sameFingerprint: sameField(fields[6]!, fp),
        };
      }
    }
    const grace = Number(fields[4]);
    let pttl: number;
    try {
      pttl = Number(await wire.pttl(key));
    } catch (err) {
      throw failure('claim', err);
    }
    if (!(pttl > grace)) return undefined;
    // The lease's end on the server's clock, as the script reports it (expiry minus grace), from
    // this process's reading of that clock.
    const expiresAt = Math.floor(performance.now() + clockOffset) + pttl - grace;
    return {
      status: 'in-flight',
      attempt: Number(fields[3]),
      expiresAt: new Date(expiresAt),
      sameFingerprint: sameField(fields[6]!, fp),
    };
  }

  /** How long the key outlives its lease: the claim's retentionMs, else leaseGrace (at least the lease). */
  function grace(leaseMs: number, retentionMs: number | undefined): number {
    if (retentionMs !== undefined) return duration(retentionMs, 'retentionMs');
    return Math.min(Math.max(leaseMs, minGraceMs), MAX_MS);
  }

  const inbox = redisInbox({
    wire,
    prefix,
    failure,
    answered: afterFirstAnswer,
    newToken,
  });

  return markBuiltin('redis', client, prefix, {
    inbox,

    /**
     * Reachable, the server's clock, a `maxmemory-policy` that cannot evict keys, scripts that run,
     * and which confirm runs (`compare-and-set`: native or Lua).
     */
    health: async () => {
      const health = await redisHealth(wire, client, claimKey('~health'));
      if (casAnswer() === undefined) await probeCas();
      // Scripts must run (release, extend, takeovers, record; every confirm on Redis 7): a server
      // or ACL that refuses them would otherwise show only on those paths.
      let scriptsCheck: HealthCheck;
      try {
        await call('health check', scripts.inspect, claimKey('~health'), []);
        scriptsCheck = { name: 'scripts', ok: true, detail: 'Lua scripts run' };
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        scriptsCheck = { name: 'scripts', ok: false, detail: message.slice(0, 300) };
      }
      const check: HealthCheck = {
        name: 'compare-and-set',
        ok: true,
        detail:
          nativeCas === true
            ? 'native: confirm is one SET ... IFEQ'
            : nativeCas === false
              ? 'Lua: confirm is a script (the server has no SET ... IFEQ: Redis before 8.4, Valkey before 8.1)'
              : 'not known yet: confirm is a script until the server answers',
      };
      return { ...health, checks: [...health.checks, scriptsCheck, check] };
    },

    // Not an async function: the fast claim's promise is handed back as it is (no second promise
    // and tick around it on every delivery); nothing here may throw (a bad option rejects).
    claim(key: string, options: ClaimOptions): Promise<Claim> {
      try {
        const { leaseMs, fingerprint, retentionMs } = options;
        const lease = duration(leaseMs, 'leaseMs');
        const g = grace(lease, retentionMs);
        // The owner id, and after it the lease's end as the server's clock will have it at the SET
        // at the earliest (this process's reading of that clock is never ahead of it): a later claim
        // that finds the key answers "in flight" on it without asking the key's PTTL.
        const now = performance.now();
        const token =
          clockOffset === undefined || serverNowCeiling(now) === undefined
            ? newToken()
            : `${newToken()}.${Math.floor(now + clockOffset) + lease}`;
        const fp = fingerprintField(fingerprint);
        return fastClaims
          ? fastClaim(key, token, g, fp, lease, fingerprint)
          : scriptClaim(key, token, lease, g, fp, fingerprint);
      } catch (err) {
        return Promise.reject(err);
      }
    },

    async confirm(lease: Lease, { retentionMs }: { retentionMs: number }): Promise<boolean> {
      // No real token is empty ('' marks a released record, which nobody owns) or holds the field
      // separator. The completed record keeps the owner id (a repeated confirm finds it).
      const id = ownerId(lease.token);
      if (id === undefined) return false;
      const retention = String(duration(retentionMs, 'retentionMs'));
      const key = claimKey(lease.key);
      const done = `c|${id}|${lease.attempt}|0|${retention}|${fingerprintField(lease.fingerprint)}`;
      const held = written.get(lease);
      // While the lease is surely live, a command after the first must go out before its end (a
      // takeover, its release and that record's expiry could come first, and a late write would turn
      // the retry away as a duplicate). A confirm called later (or of a lease this store did not hand
      // out) is the script, as on Redis 7.
      const notAfter = held !== undefined && leaseNow() < held.bound ? held.bound : undefined;
      const claimed = notAfter === undefined ? undefined : held?.value;
      if (claimed !== undefined && casAnswer() === true) {
        // The key still holds what the claim wrote: ours, untouched since. The SET answers what the
        // key held, so a miss is mostly decided by that one command too.
        let was: unknown;
        try {
          was = await wire.setIfEq(key, done, claimed, retention, true);
        } catch (err) {
          // The server refused it: the script gives the answer (or the error) it always gave. A
          // node without IFEQ (a cluster mid-upgrade) says "syntax error": the script from now on.
          if (!serverError(err)) throw failure('confirm', err);
          if (/syntax/i.test((err as Error).message)) nativeCas = false;
          was = REFUSED;
        }
        if (was !== REFUSED) {
          const verdict = was === null || was === undefined ? undefined : owned(String(was), id, claimed);
          if (verdict !== undefined) {
            // Completed (now or before): a repeated confirm goes to the script, which finds our id.
            if (verdict) written.delete(lease);
            return verdict;
          }
        }
        // The key vanished (invariant 3: completed all the same), holds our lease renewed, or the
        // server refused the SET: the script decides, if it can still be sent in time.
        if (leaseNow() >= notAfter!) {
          throw tooLate(
            was === REFUSED
              ? 'the server refused SET ... IFEQ'
              : 'the key no longer held what the claim wrote (it vanished, or the lease was renewed meanwhile)',
          );
        }
      }
      // On Redis 7 the script makes that comparison itself, in the same call (one command, sent
      // while the lease is live); past a native miss it decides by the owner id. A confirm with no
      // live lease it knows of sends the script's body: one command whatever the server has loaded
      // (an EVALSHA's NOSCRIPT would make the EVAL a second one, with nothing to bound it).
      const args = claimed === undefined ? [id, done, retention] : [id, done, retention, claimed];
      const reply =
        notAfter === undefined
          ? await byBody('confirm', scripts.confirm, key, args)
          : await call('confirm', scripts.confirm, key, args, notAfter);
      const confirmed = Number(reply) === 1;
      if (confirmed) written.delete(lease);
      return confirmed;
    },

    async release(lease: Lease): Promise<boolean> {
      written.delete(lease);
      const id = ownerId(lease.token);
      if (id === undefined) return false;
      return Number(await call('release', scripts.release, claimKey(lease.key), [id])) === 1;
    },

    async extend(lease: Lease, { leaseMs }: { leaseMs: number }): Promise<boolean> {
      const ms = duration(leaseMs, 'leaseMs');
      const id = ownerId(lease.token);
      if (id === undefined) return false;
      // A renewal rewrites the key (a new lease end): its confirm goes to the script. Until the
      // answer, and if it fails, the lease ends at the earlier of the two ends (the renewal may have
      // landed, with a shorter lease); once renewed, at the new one.
      const sentAt = leaseNow();
      const renewedBound = confirmBound(sentAt, ms);
      const before = written.get(lease);
      if (before !== undefined) {
        written.set(lease, { value: undefined, bound: Math.min(before.bound, renewedBound) });
      }
      const reply = await call('extend', scripts.extend, claimKey(lease.key), [id, String(ms)]);
      const renewed = Number(reply) === 1;
      if (renewed && before !== undefined) written.set(lease, { value: undefined, bound: renewedBound });
      return renewed;
    },

    async record(key: string, { retentionMs, fingerprint }: RecordOptions): Promise<{ duplicate: boolean }> {
      const reply = await call('record', scripts.record, claimKey(key), [
        newToken(),
        String(duration(retentionMs, 'retentionMs')),
        fingerprintField(fingerprint),
      ]);
      return { duplicate: Number(reply) === 1 };
    },

    async advance(entity: string, version: number): Promise<boolean> {
      assertVersion(version);
      return Number(await call('advance', scripts.advance, versionKey(entity), [String(version)])) === 1;
    },

    async inspect(key: string): Promise<RecordView | undefined> {
      const reply = (await call('inspect', scripts.inspect, claimKey(key), [])) as [string, number] | null;
      if (!reply) return undefined;
      return parseView(key, String(reply[0]), Number(reply[1]));
    },

    async close(): Promise<void> {
      // The client is the caller's: it stays open for the rest of their application.
    },
  });
}

function parseView(key: string, value: string, keyExpiresAt: number): RecordView | undefined {
  const match = VALUE.exec(value);
  if (!match) return undefined;
  const [, state, token, attempt, graceMs, ttlMs, fp] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  return {
    key,
    // A processing record without a token was released: nobody owns it.
    state: state === 'c' ? 'completed' : token === '' ? 'released' : 'processing',
    attempt: Number(attempt),
    fingerprint: fp === '' ? undefined : fp.slice(1),
    expiresAt: new Date(keyExpiresAt - Number(graceMs)),
    // The key's expiry minus the TTL it was written with: the server time of the claim, the last
    // renewal, the release, or the completion.
    updatedAt: new Date(keyExpiresAt - Number(ttlMs)),
  };
}

// ---------------------------------------------------------------------------------------------
// The eviction-policy check.

interface ConfigCapable {
  /** node-redis */
  configGet?(parameter: string): PromiseLike<Record<string, string>>;
  /** ioredis */
  config?(subcommand: 'GET', parameter: string): PromiseLike<unknown>;
  /** node-redis cluster */
  masters?: unknown[];
  nodeClient?(node: unknown): PromiseLike<unknown> | unknown;
  /** ioredis cluster */
  nodes?(role?: 'master'): unknown[];
}

async function readMaxmemory(client: ConfigCapable): Promise<Record<string, string>> {
  if (typeof client.configGet === 'function') {
    return { ...(await client.configGet('maxmemory*')) };
  }
  if (typeof client.config === 'function') {
    const reply = await client.config('GET', 'maxmemory*');
    if (Array.isArray(reply)) {
      const out: Record<string, string> = {};
      for (let i = 0; i + 1 < reply.length; i += 2) out[String(reply[i])] = String(reply[i + 1]);
      return out;
    }
    if (reply instanceof Map) return Object.fromEntries([...reply].map(([k, v]) => [String(k), String(v)]));
    return { ...(reply as Record<string, string>) };
  }
  throw new Error('no CONFIG command on this client');
}

/** The node clients to ask: every master of a cluster, else the client itself. */
async function configClients(client: ConfigCapable): Promise<ConfigCapable[]> {
  if (Array.isArray(client.masters) && typeof client.nodeClient === 'function') {
    const nodeClient = client.nodeClient.bind(client);
    return Promise.all(client.masters.map(async (m) => (await nodeClient(m)) as ConfigCapable));
  }
  if (typeof client.nodes === 'function') {
    const masters = client.nodes('master') as ConfigCapable[];
    if (masters.length > 0) return masters;
  }
  return [client];
}

/**
 * Warns when a server's `maxmemory-policy` may evict onceonly's keys. Every key the store writes
 * carries a TTL, so the volatile-* policies can evict them as well as allkeys-*: only `noeviction`
 * is safe. An evicted claim or completion is forgotten, and the next delivery runs the work again.
 * Silently does nothing when CONFIG is refused.
 */
async function checkEvictionPolicy(client: RedisClientLike, warn: (message: string) => void): Promise<void> {
  for (const { policy, unlimited } of (await evictionPolicies(client)).unsafe) {
    warn(
      `onceonly: Redis maxmemory-policy is "${policy}", which can evict onceonly's keys (they all carry a TTL, so volatile-* policies evict them too); an evicted key lets a duplicate delivery run again. Set maxmemory-policy to noeviction, or give onceonly a Redis of its own.${
        unlimited ? ' (maxmemory is 0 right now, so nothing is evicted until a memory limit is set.)' : ''
      }`,
    );
  }
}

/**
 * The `maxmemory-policy` of every node (every master of a cluster): the unsafe ones (anything but
 * `noeviction`), each once, and how many nodes answered CONFIG at all.
 */
async function evictionPolicies(
  client: RedisClientLike,
): Promise<{ unsafe: { policy: string; unlimited: boolean }[]; nodes: number; read: number }> {
  const nodes = await configClients(client as ConfigCapable);
  const unsafe: { policy: string; unlimited: boolean }[] = [];
  let read = 0;
  for (const node of nodes) {
    let config: Record<string, string>;
    try {
      config = await readMaxmemory(node);
    } catch {
      continue;
    }
    read++;
    const policy = config['maxmemory-policy'];
    if (policy === undefined || policy === 'noeviction' || unsafe.some((u) => u.policy === policy)) continue;
    unsafe.push({ policy, unlimited: config.maxmemory === '0' });
  }
  return { unsafe, nodes: nodes.length, read };
}

/** The Redis store's health: the server's clock (TIME) and whether its eviction policy is safe. */
async function redisHealth(wire: Wire, client: RedisClientLike, key: string): Promise<StoreHealth> {
  const reply = (await wire.time(key)) as unknown[];
  const now = new Date(Number(reply[0]) * 1000 + Math.floor(Number(reply[1]) / 1000));
  const { unsafe, nodes, read } = await evictionPolicies(client);
  const check: HealthCheck =
    unsafe.length > 0
      ? {
          name: 'maxmemory-policy',
          ok: false,
          detail: `${unsafe.map((u) => u.policy).join(', ')}: can evict onceonly's keys (set noeviction)`,
        }
      : read === 0
        ? { name: 'maxmemory-policy', ok: true, detail: 'not checked: the server refuses CONFIG' }
        : { name: 'maxmemory-policy', ok: true, detail: `noeviction on ${read} of ${nodes} node(s)` };
  return { now, checks: [check] };
}

// ---------------------------------------------------------------------------------------------
// The offline-queue check: what the client does with a command while Redis is away.

interface ClientSetup {
  /** node-redis client (after its defaults), ioredis client or Cluster (after theirs) */
  options?: {
    disableOfflineQueue?: unknown;
    enableOfflineQueue?: unknown;
    maxRetriesPerRequest?: unknown;
  };
  /** node-redis cluster: its options as given; `defaults` apply to the client of every node */
  _options?: { defaults?: { disableOfflineQueue?: unknown } };
  /** ioredis: true on a Cluster */
  isCluster?: unknown;
  listenerCount?(event: string): number;
}

const LATE =
  'so through a Redis outage every claim and confirm waits for the reconnect instead of failing, and can reach Redis long after its delivery gave up';

/**
 * Warns, from the client's options alone, when commands issued while Redis is away would wait
 * instead of failing, and when a node-redis client has no 'error' listener. Sends nothing.
 */
function checkOfflineQueue(client: RedisClientLike, warn: (message: string) => void): void {
  const c = client as ClientSetup & ConfigCapable;
  if (typeof (client as NodeRedisLike).evalSha === 'function') {
    const cluster = Array.isArray(c.masters) && typeof c.nodeClient === 'function';
    const options = cluster ? c._options : c.options;
    if (options && typeof options === 'object') {
      const queued = cluster
        ? c._options?.defaults?.disableOfflineQueue !== true
        : c.options?.disableOfflineQueue !== true;
      if (queued) {
        warn(
          cluster
            ? `onceonly: this node-redis cluster's node clients queue commands while disconnected (defaults.disableOfflineQueue is not set), ${LATE}. Create it with createCluster({ rootNodes, defaults: { disableOfflineQueue: true, socket: { reconnectStrategy: (retries) => Math.min(100 * 2 ** retries, 2_000) } } }); see "Outages" in docs/redis.md.`
            : `onceonly: this node-redis client queues commands while disconnected (disableOfflineQueue is not set), ${LATE}. Create it with createClient({ url, disableOfflineQueue: true, socket: { reconnectStrategy: (retries) => Math.min(100 * 2 ** retries, 2_000) } }); see "Outages" in docs/redis.md.`,
        );
      }
    }
    if (typeof c.listenerCount === 'function' && c.listenerCount('error') === 0) {
      const name = cluster ? 'cluster' : 'client';
      warn(
        `onceonly: this node-redis ${name} has no 'error' listener; node-redis emits 'error' when the connection drops, and an unhandled 'error' ends the process. Add one before connecting: ${name}.on('error', (err) => console.error('redis:', err.message)).`,
      );
    }
    return;
  }
  const options = c.options;
  if (typeof (client as IoRedisLike).evalsha !== 'function' || !options || typeof options !== 'object')
    return;
  if (c.isCluster === true) {
    if (options.enableOfflineQueue !== false) {
      warn(
        `onceonly: this ioredis Cluster queues commands while it cannot reach a node (enableOfflineQueue is on), ${LATE}. Create it with new Cluster(nodes, { enableOfflineQueue: false }); see "Outages" in docs/redis.md.`,
      );
    }
    return;
  }
  // Commands in flight when the connection drops are resent after a reconnect, until
  // maxRetriesPerRequest reconnect attempts have failed (null or negative: never given up).
  const retries = options.maxRetriesPerRequest;
  const resends = !(typeof retries === 'number' && retries >= 0 && retries <= 1);
  if (options.enableOfflineQueue !== false || resends) {
    const why = [
      options.enableOfflineQueue !== false ? 'enableOfflineQueue is on' : '',
      resends ? `maxRetriesPerRequest is ${String(retries)}` : '',
    ]
      .filter(Boolean)
      .join(', ');
    warn(
      `onceonly: this ioredis client holds commands through a disconnection (${why}), ${LATE}. Create it with new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: (times) => Math.min(50 * 2 ** times, 2_000) }); see "Outages" in docs/redis.md.`,
    );
  }
}
