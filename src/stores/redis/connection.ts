/**
 * Whether a client's connection changed since a reading (a reconnect may reach another server, after
 * a failover): what lets the store trust its reading of the server's clock and its answer about
 * native compare-and-set.
 */

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
export function connectionCounter(client: object): (() => number) | undefined {
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
