/**
 * The Redis store's operational checks: the start-up warnings (an eviction policy that can evict
 * onceonly's keys; a client that queues commands through an outage) and the health report's
 * server clock and eviction policy. They read the server's CONFIG and the client's own options;
 * none sends a write.
 */
import type { HealthCheck, StoreHealth } from '../../core/health.js';
import type { IoRedisLike, NodeRedisLike, RedisClientLike, Wire } from './wire.js';

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
export async function checkEvictionPolicy(
  client: RedisClientLike,
  warn: (message: string) => void,
): Promise<void> {
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
export async function redisHealth(wire: Wire, client: RedisClientLike, key: string): Promise<StoreHealth> {
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
export function checkOfflineQueue(client: RedisClientLike, warn: (message: string) => void): void {
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
