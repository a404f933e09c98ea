/**
 * `onceonly/redis`: a store on Redis (or Valkey), through the node-redis or ioredis client you
 * already have, standalone or cluster. Only the clients' shapes are used: neither package is
 * imported at run time.
 */
import { createHash, randomFillSync } from 'node:crypto';
import { ConfigError, StoreUnavailableError } from '../errors.js';
import { type Duration, parsePositiveDuration } from '../lease/duration.js';
import {
  assertVersion,
  type Claim,
  type ClaimOptions,
  createLease,
  type Lease,
  type RecordOptions,
  type RecordView,
  type Store,
} from '../lease/types.js';
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
}

/** A node-redis or ioredis client, standalone or cluster; Valkey servers work with either. */
export type RedisClientLike = NodeRedisLike | IoRedisLike;

export interface RedisStoreOptions {
  /**
   * Your connected client: node-redis `createClient()` / `createCluster()` (v5+, after `connect()`)
   * or ioredis `new Redis()` / `new Cluster()`. The store never connects, quits or reconfigures it.
   * @example
   * redisStore({ client: await createClient({ url: process.env.REDIS_URL }).connect() })
   */
  client: RedisClientLike;
  /**
   * Prepended to every key: claims live at `${prefix}k:${key}`, ordering-guard versions at
   * `${prefix}v:${entity}`. Keep braces out of it on Redis Cluster unless you want every key in one
   * slot.
   * @default 'onceonly:'
   * @example
   * redisStore({ client, prefix: 'billing:webhooks:' })
   */
  prefix?: string;
  /**
   * How long a claim key outlives its lease, at least (the store uses the longer of this and the
   * lease). A delivery that takes over within this window after a crash gets `attempt` + 1; after it
   * the key is gone and the next claim starts again at attempt 1. Costs memory only for leases that
   * ran out, which is to say crashed processes.
   * @default '1h'
   * @example
   * redisStore({ client, leaseGrace: '6h' })
   */
  leaseGrace?: Duration;
  /**
   * Where warnings go: today only the start-up check that `maxmemory-policy` cannot evict keys.
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
}

const DEFAULT_PREFIX = 'onceonly:';
const DEFAULT_GRACE = '1h';
// Lua formats numbers with 14 significant digits, so every duration handed to a script stays below
// 1e13 ms (about 300 years) and is passed as a decimal string built here.
const MAX_MS = 1e13;
/** How often the server's clock is read again (one `TIME`, in a claim's round trip). */
const CLOCK_REFRESH_MS = 10_000;

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

/** How the store talks to a client: three kinds of command, each on one key's node. */
interface Wire {
  /** A script by EVALSHA; on NOSCRIPT (never loaded, SCRIPT FLUSH, failover) by EVAL, which caches it. */
  run(s: Script, key: string, args: string[]): Promise<unknown>;
  /** `SET key value NX PX px GET`: the value the key already held, or null when the SET won. */
  setNx(key: string, value: string, px: number): Promise<unknown>;
  /** `TIME` on the node that holds `key`: [seconds, microseconds]. */
  time(key: string): Promise<unknown>;
}

function isNoScript(err: unknown): boolean {
  return err instanceof Error && err.message.includes('NOSCRIPT');
}

interface NodeRedisClusterLike {
  masters?: unknown;
  nodeClient?: unknown;
  sendCommand(firstKey: string, isReadonly: boolean, args: string[]): PromiseLike<unknown>;
}

function adapt(client: RedisClientLike): Wire {
  if (typeof (client as NodeRedisLike).evalSha === 'function') {
    const cluster = client as unknown as NodeRedisClusterLike;
    // A cluster routes by the key given first; a client takes the arguments alone.
    const send: (key: string, args: string[]) => Promise<unknown> =
      Array.isArray(cluster.masters) && typeof cluster.nodeClient === 'function'
        ? (key, args) => Promise.resolve(cluster.sendCommand(key, false, args))
        : (_key, args) =>
            Promise.resolve(
              (client as unknown as { sendCommand(a: string[]): PromiseLike<unknown> }).sendCommand(args),
            );
    return {
      run: (s, key, args) =>
        send(key, ['EVALSHA', s.sha, '1', key, ...args]).catch((err: unknown) => {
          if (!isNoScript(err)) throw err;
          return send(key, ['EVAL', s.body, '1', key, ...args]);
        }),
      setNx: (key, value, px) => send(key, ['SET', key, value, 'NX', 'PX', String(px), 'GET']),
      time: (key) => send(key, ['TIME']),
    };
  }
  if (typeof (client as IoRedisLike).evalsha === 'function') {
    const c = client as IoRedisLike;
    return {
      run: (s, key, args) =>
        Promise.resolve(c.evalsha(s.sha, 1, key, ...args)).catch((err: unknown) => {
          if (!isNoScript(err)) throw err;
          return c.eval(s.body, 1, key, ...args);
        }),
      setNx: (key, value, px) => Promise.resolve(c.call('SET', key, value, 'PX', String(px), 'NX', 'GET')),
      time: () => Promise.resolve(c.call('TIME')),
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

// Owner tokens (128 random bits, hex) cut from a pooled buffer: one getrandom call per 256 tokens
// instead of one per claim, on the hottest path of the store.
const pool = Buffer.alloc(16 * 256);
let pooled = pool.length;
function newToken(): string {
  if (pooled === pool.length) {
    randomFillSync(pool);
    pooled = 0;
  }
  pooled += 16;
  return pool.toString('hex', pooled - 16, pooled);
}

const fingerprintField = (fingerprint: string | undefined) =>
  fingerprint === undefined ? '' : `=${fingerprint}`;

/** Stored and offered fingerprint fields match when equal or when either side has none (''). */
const sameField = (stored: string, offered: string) => stored === '' || offered === '' || stored === offered;

/**
 * A store on Redis or Valkey, for node-redis (v5+) and ioredis clients, standalone or Redis Cluster.
 * Claiming a free key is one command: a plain `SET NX PX` (with `GET`, so a completed key is
 * answered in the same trip); the lease's end is the server's time, read with `TIME` every few
 * seconds in a claim's round trip. Only when the key is being processed does a script decide
 * between in-flight and takeover. Confirm, release, extend,
 * record and advance are owner-checked scripts (EVALSHA, falling back to EVAL on NOSCRIPT). Every
 * command acts on one key, so it runs on Redis Cluster, and all time is the server's.
 *
 * Run the server with `maxmemory-policy noeviction`: an evicted key lets a duplicate through. The
 * store warns at start-up otherwise. See docs/redis.md.
 *
 * @example
 * import { createClient } from 'redis';
 * import { redisStore } from 'onceonly/redis';
 * const store = redisStore({ client: await createClient({ url: process.env.REDIS_URL }).connect() });
 *
 * @example
 * import { Redis } from 'ioredis';
 * const store = redisStore({ client: new Redis(process.env.REDIS_URL), prefix: 'shop:' });
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
  let policyChecked = options.checkEvictionPolicy === false;

  const claimKey = (key: string) => `${prefix}k:${key}`;
  const versionKey = (entity: string) => `${prefix}v:${entity}`;

  function afterFirstAnswer(): void {
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
      return new StoreUnavailableError(
        `onceonly: the Redis key for ${what} holds a value onceonly did not write; give redisStore a prefix that nothing else writes under`,
        { cause: err, code: 'store_foreign_value' },
      );
    }
    return new StoreUnavailableError(
      `onceonly: Redis ${what} failed (${message}); check that the server is reachable and the client connected`,
      { cause: err },
    );
  }

  function call(what: string, s: Script, key: string, args: string[]): Promise<unknown> {
    return wire.run(s, key, args).then(
      (reply) => {
        afterFirstAnswer();
        return reply;
      },
      (err: unknown) => {
        throw failure(what, err);
      },
    );
  }

  // The server's clock, carried on this process's monotonic clock: `TIME` is read now and then,
  // sent in the same tick as a claim's SET (so in its round trip), and a free key's lease end is
  // the server time the SET was sent at plus the lease. The offset is taken at the reply, so it is
  // never ahead of the server, and the lease end never later than the key's real one (it is earlier
  // by at most a round trip). The process's own wall clock plays no part.
  let clockOffset: number | undefined; // server ms minus performance.now()
  let clockReadAt = Number.NEGATIVE_INFINITY;
  let clockReading: Promise<void> | undefined;
  function readClock(key: string): Promise<void> {
    clockReading ??= wire
      .time(key)
      .then(
        (reply) => {
          const at = performance.now();
          const [seconds, micros] = reply as [unknown, unknown];
          // String() first: a client with a typeMapping may hand back Buffers.
          const offset = Number(String(seconds)) * 1000 + Math.floor(Number(String(micros)) / 1000) - at;
          if (Number.isFinite(offset)) {
            clockOffset = offset;
            clockReadAt = at;
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
   * The claim of a key nobody holds: one plain SET NX PX, with GET so a completed key is answered in
   * the same trip. Returns undefined when the key is processing (the script decides) or the server
   * is too old for SET NX GET.
   */
  async function fastClaim(
    userKey: string,
    token: string,
    g: number,
    fp: string,
    leaseMs: number,
    fingerprint: string | undefined,
  ): Promise<Claim | undefined> {
    const key = claimKey(userKey);
    const sentAt = performance.now();
    const clock = sentAt - clockReadAt > CLOCK_REFRESH_MS ? readClock(key) : undefined;
    let held: unknown;
    try {
      held = await wire.setNx(key, `p|${token}|1|${g}|${leaseMs + g}|${fp}`, leaseMs + g);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (/syntax error/i.test(message)) {
        fastClaims = false;
        return undefined;
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
        if (!reply) throw failure('claim', new Error('the claimed key vanished at once'));
        expiresAt = Number(reply[1]) - g;
      }
      return {
        status: 'acquired',
        lease: createLease({ key: userKey, token, attempt: 1, fingerprint, expiresAt: new Date(expiresAt) }),
      };
    }
    const value = String(held);
    if (value.startsWith('c|')) {
      const match = /^c\|[^|]*\|\d+\|\d+\|\d+\|(.*)$/s.exec(value);
      if (match) return { status: 'completed', sameFingerprint: sameField(match[1]!, fp) };
    }
    return undefined;
  }

  function grace(leaseMs: number): number {
    return Math.min(Math.max(leaseMs, minGraceMs), MAX_MS);
  }

  return {
    async claim(key: string, { leaseMs, fingerprint }: ClaimOptions): Promise<Claim> {
      const lease = duration(leaseMs, 'leaseMs');
      const g = grace(lease);
      const token = newToken();
      const fp = fingerprintField(fingerprint);
      if (fastClaims) {
        const fast = await fastClaim(key, token, g, fp, lease, fingerprint);
        if (fast) return fast;
      }
      const reply = (await call('claim', scripts.claim, claimKey(key), [
        token,
        String(lease),
        String(g),
        fp,
        String(lease + g),
      ])) as number[];
      const [status, a, b, c] = reply.map(Number);
      if (status === 1) {
        return {
          status: 'acquired',
          lease: createLease({ key, token, attempt: a!, fingerprint, expiresAt: new Date(b!) }),
        };
      }
      if (status === 2) {
        return { status: 'in-flight', attempt: a!, expiresAt: new Date(b!), sameFingerprint: c === 1 };
      }
      return { status: 'completed', sameFingerprint: a === 1 };
    },

    async confirm(lease: Lease, { retentionMs }: { retentionMs: number }): Promise<boolean> {
      const reply = await call('confirm', scripts.confirm, claimKey(lease.key), [
        lease.token,
        String(duration(retentionMs, 'retentionMs')),
        String(lease.attempt),
        fingerprintField(lease.fingerprint),
      ]);
      return Number(reply) === 1;
    },

    async release(lease: Lease): Promise<boolean> {
      return Number(await call('release', scripts.release, claimKey(lease.key), [lease.token])) === 1;
    },

    async extend(lease: Lease, { leaseMs }: { leaseMs: number }): Promise<boolean> {
      const ms = duration(leaseMs, 'leaseMs');
      const g = grace(ms);
      const reply = await call('extend', scripts.extend, claimKey(lease.key), [
        lease.token,
        String(g),
        String(ms + g),
      ]);
      return Number(reply) === 1;
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
  };
}

function parseView(key: string, value: string, keyExpiresAt: number): RecordView | undefined {
  const match = /^([pc])\|[^|]*\|(\d+)\|(\d+)\|(\d+)\|(.*)$/s.exec(value);
  if (!match) return undefined;
  const [, state, attempt, graceMs, ttlMs, fp] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  return {
    key,
    state: state === 'p' ? 'processing' : 'completed',
    attempt: Number(attempt),
    fingerprint: fp === '' ? undefined : fp.slice(1),
    expiresAt: new Date(keyExpiresAt - Number(graceMs)),
    // The key's expiry minus the TTL it was written with: the server time of the claim, the last
    // renewal, or the completion.
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
  const nodes = await configClients(client as ConfigCapable);
  const seen = new Set<string>();
  for (const node of nodes) {
    let config: Record<string, string>;
    try {
      config = await readMaxmemory(node);
    } catch {
      continue;
    }
    const policy = config['maxmemory-policy'];
    if (policy === undefined || policy === 'noeviction' || seen.has(policy)) continue;
    seen.add(policy);
    const unlimited = config.maxmemory === '0';
    warn(
      `onceonly: Redis maxmemory-policy is "${policy}", which can evict onceonly's keys (they all carry a TTL, so volatile-* policies evict them too); an evicted key lets a duplicate delivery run again. Set maxmemory-policy to noeviction, or give onceonly a Redis of its own.${
        unlimited ? ' (maxmemory is 0 right now, so nothing is evicted until a memory limit is set.)' : ''
      }`,
    );
  }
}
