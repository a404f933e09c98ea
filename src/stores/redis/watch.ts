/**
 * The Redis inbox's watch connection: a `duplicate()` of the store's client (node-redis 4 and 5,
 * ioredis; a client or a cluster, whose PUBLISH reaches every node's subscribers), subscribed to
 * the store's watch channel, `<prefix>i:due`. The inbox's scripts publish a receiver's key part
 * there when they leave one of its entries pending and due (accept, a retry without delay,
 * requeue). A drop of the connection is reported and the duplicate given up: the store's watch
 * (inbox-watch.ts) opens a new one with backoff, so a client's own reconnect settings do not matter.
 */
import type { WatchChannel } from '../inbox-watch.js';

/** A node-redis duplicate, v4 or v5, client or cluster. */
interface NodeRedisSubscriber {
  on(event: string, listener: (error?: unknown) => void): unknown;
  connect(): Promise<unknown>;
  subscribe(channel: string, listener: (message: unknown) => void): Promise<unknown>;
  destroy?(): unknown;
  disconnect?(): Promise<unknown>;
}

/** An ioredis duplicate, client or Cluster. */
interface IoRedisSubscriber {
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  connect(): Promise<unknown>;
  subscribe(channel: string): Promise<unknown>;
  disconnect(): unknown;
}

/** The channel a store's watchers subscribe to (not a key: ioredis's `keyPrefix` leaves it as is). */
export const watchChannelOf = (prefix: string): string => `${prefix}i:due`;

/** How to open the watch connection of a store over `client`, or undefined when it has no `duplicate()`. */
export function redisWatch(client: object, channel: string): WatchChannel | undefined {
  const c = client as { duplicate?: unknown; evalSha?: unknown; isCluster?: unknown };
  if (typeof c.duplicate !== 'function') return undefined;
  const duplicate = c.duplicate as (...args: unknown[]) => unknown;
  if (typeof c.evalSha === 'function') {
    return {
      open: (heard, lost) => nodeRedis(duplicate.call(client) as NodeRedisSubscriber, channel, heard, lost),
    };
  }
  // ioredis: connected by us (lazyConnect), so its first failure rejects `connect()`.
  const args = c.isCluster === true ? [[], { lazyConnect: true }] : [{ lazyConnect: true }];
  return {
    open: (heard, lost) => ioredis(duplicate.apply(client, args) as IoRedisSubscriber, channel, heard, lost),
  };
}

/** Reports a drop once, and never after our own close. */
function dropper(lost: (error: unknown) => void) {
  const state = { closing: false, dropped: false };
  const drop = (error: unknown) => {
    if (state.closing || state.dropped) return;
    state.dropped = true;
    lost(error instanceof Error ? error : new Error('onceonly: the inbox watch connection closed'));
  };
  return { state, drop };
}

async function nodeRedis(
  sub: NodeRedisSubscriber,
  channel: string,
  heard: (receiver: string) => void,
  lost: (error: unknown) => void,
): Promise<() => Promise<void>> {
  const { state, drop } = dropper(lost);
  // node-redis emits 'error' when the connection drops (and ends the process without a listener).
  sub.on('error', drop);
  sub.on('end', drop);
  const close = async () => {
    if (state.closing) return;
    state.closing = true;
    try {
      if (typeof sub.destroy === 'function') sub.destroy();
      else await sub.disconnect?.();
    } catch {
      // already closed
    }
  };
  try {
    await sub.connect();
    await sub.subscribe(channel, (message) => heard(String(message)));
  } catch (error) {
    await close();
    throw error;
  }
  return close;
}

async function ioredis(
  sub: IoRedisSubscriber,
  channel: string,
  heard: (receiver: string) => void,
  lost: (error: unknown) => void,
): Promise<() => Promise<void>> {
  const { state, drop } = dropper(lost);
  let last: unknown;
  // ioredis emits 'error' before it closes, then 'close' (and 'end' once it gives up).
  sub.on('error', (error) => {
    last = error;
  });
  sub.on('close', () => drop(last));
  sub.on('end', () => drop(last));
  sub.on('message', (from, message) => {
    if (String(from) === channel) heard(String(message));
  });
  const close = async () => {
    if (state.closing) return;
    state.closing = true;
    try {
      sub.disconnect();
    } catch {
      // already closed
    }
  };
  try {
    await sub.connect();
    await sub.subscribe(channel);
  } catch (error) {
    await close();
    throw error;
  }
  return close;
}
