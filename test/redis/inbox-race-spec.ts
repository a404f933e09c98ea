/**
 * The Redis spec module for the multi-process inbox race (test/support/inbox-race.ts): even workers
 * open a node-redis client, odd ones an ioredis client, all on the shared server and one prefix.
 */
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { redisStore } from '../../src/stores/redis.js';
import { servers } from '../support/servers.js';

const prefix = (runId: string) => `oo-irace:${runId}:`;

export async function open(runId: string, seed: number) {
  if (seed % 2 === 0) {
    const client = await createClient({ url: servers.redis }).connect();
    const store = redisStore({
      client,
      prefix: prefix(runId),
      checkEvictionPolicy: false,
      checkOfflineQueue: false,
    });
    return { inbox: store.inbox!, close: async () => void (await client.quit()) };
  }
  const client = new Redis(servers.redis);
  const store = redisStore({
    client,
    prefix: prefix(runId),
    checkEvictionPolicy: false,
    checkOfflineQueue: false,
  });
  return { inbox: store.inbox!, close: async () => client.disconnect() };
}

export async function cleanup(runId: string): Promise<void> {
  const client = await createClient({ url: servers.redis }).connect();
  try {
    for await (const keys of client.scanIterator({ MATCH: `${prefix(runId)}*`, COUNT: 1000 })) {
      if (keys.length > 0) await client.unlink(keys);
    }
  } finally {
    await client.quit();
  }
}
