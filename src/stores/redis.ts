/**
 * `onceonly/redis`: a store on Redis (or Valkey), through the node-redis or ioredis client you
 * already have, standalone or cluster. Only the clients' shapes are used: neither package is
 * imported at run time.
 */
import { newToken } from '../core/crypto.js';
import { type Duration, parsePositiveDuration } from '../core/duration.js';
import { markBuiltin, type Store } from '../core/types.js';
import { ConfigError } from '../errors.js';
import { watchHub } from './inbox-watch.js';
import { checkOfflineQueue } from './redis/checks.js';
import { RedisClaims } from './redis/claims.js';
import { redisInbox } from './redis/inbox.js';
import { redisWatch, watchChannelOf } from './redis/watch.js';
import { adapt, type RedisClientLike } from './redis/wire.js';

export type { IoRedisLike, NodeRedisLike, RedisClientLike } from './redis/wire.js';

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
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  if (typeof prefix !== 'string') {
    throw new ConfigError('invalid_option', 'onceonly: redisStore prefix must be a string');
  }
  const minGraceMs = parsePositiveDuration(options.leaseGrace ?? DEFAULT_GRACE, 'leaseGrace');
  const warn = options.onWarning ?? ((message: string) => console.warn(message));
  if (options.checkOfflineQueue !== false) checkOfflineQueue(client, warn);
  const claims = new RedisClaims({
    wire,
    client,
    prefix,
    minGraceMs,
    warn,
    checkEvictionPolicy: options.checkEvictionPolicy !== false,
  });
  const channel = watchChannelOf(prefix);
  const watch = redisWatch(client, channel);
  const hub = watch ? watchHub(watch) : undefined;
  const inbox = redisInbox({
    wire,
    prefix,
    failure: claims.failure,
    answered: claims.afterFirstAnswer,
    newToken,
    channel,
    hub,
  });
  return markBuiltin('redis', client, prefix, {
    inbox,
    health: () => claims.health(),
    claim: (key, claimOptions) => claims.claim(key, claimOptions),
    confirm: (lease, confirmOptions) => claims.confirm(lease, confirmOptions),
    release: (lease) => claims.release(lease),
    extend: (lease, extendOptions) => claims.extend(lease, extendOptions),
    record: (key, recordOptions) => claims.record(key, recordOptions),
    advance: (entity, version) => claims.advance(entity, version),
    inspect: (key) => claims.inspect(key),
    steps: claims.steps,
    async close(): Promise<void> {
      // The client is the caller's: it stays open for the rest of their application. The inbox's
      // watch connection (a duplicate of it) is ours.
      await hub?.close();
    },
  });
}
