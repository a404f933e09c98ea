/**
 * The Redis spec module for the shared multi-process harness (test/support/race.ts): every worker
 * process opens its own node-redis client; each effect is one HINCRBY on a per-run hash, so the
 * effects are counted from Redis itself.
 */
import { createClient } from 'redis';
import { redisStore } from '../../src/stores/redis.js';
import { servers } from '../support/servers.js';

const prefix = (runId: string) => `oo-race:${runId}:`;
const effectsKey = (runId: string) => `${prefix(runId)}effects`;
// Another server for the same races (test/redis/valkey.test.ts), inherited by the worker processes.
const url = () => process.env.ONCEONLY_RACE_REDIS_URL ?? servers.redis;

export async function open(runId: string) {
  const client = await createClient({ url: url() }).connect();
  return {
    store: redisStore({ client, prefix: prefix(runId), checkEvictionPolicy: false }),
    async effect(eventId: string, _attempt: number) {
      await client.hIncrBy(effectsKey(runId), eventId, 1);
    },
    async close() {
      await client.quit();
    },
  };
}

export async function effects(runId: string): Promise<Map<string, number>> {
  const client = await createClient({ url: url() }).connect();
  try {
    const all = await client.hGetAll(effectsKey(runId));
    return new Map(Object.entries(all).map(([id, n]) => [id, Number(n)]));
  } finally {
    await client.quit();
  }
}

export async function cleanup(runId: string): Promise<void> {
  const client = await createClient({ url: url() }).connect();
  try {
    for await (const keys of client.scanIterator({ MATCH: `${prefix(runId)}*`, COUNT: 1000 })) {
      if (keys.length > 0) await client.unlink(keys);
    }
  } finally {
    await client.quit();
  }
}
