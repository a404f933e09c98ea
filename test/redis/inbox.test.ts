/**
 * A receiver in inbox mode over the Redis store, through node-redis and ioredis (whose replies must
 * hand the body back as bytes): the shared spec of test/support/inbox-receiver.ts, which every store
 * runs (accept 202, duplicate, conflict, runDue, a failure retried at attempt 2, hybrid).
 */
import { randomBytes } from 'node:crypto';
import { after } from 'node:test';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { redisStore } from '../../src/stores/redis.js';
import { inboxReceiverSpec } from '../support/inbox-receiver.js';
import { reachable, servers } from '../support/servers.js';
import { stepsSpec } from '../support/steps-spec.js';

const prefix = `oo-inbox-rcv-${randomBytes(4).toString('hex')}:`;

if (
  await reachable('Redis', servers.redis, async () => {
    const probe = await createClient({ url: servers.redis }).connect();
    await probe.ping();
    await probe.quit();
  })
) {
  const nodeRedis = await createClient({ url: servers.redis }).connect();
  const ioredis = new Redis(servers.redis);
  after(async () => {
    for await (const keys of nodeRedis.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) {
      if (keys.length > 0) await nodeRedis.unlink(keys);
    }
    await nodeRedis.quit();
    ioredis.disconnect();
  });

  for (const [name, client] of [
    ['node-redis', nodeRedis],
    ['ioredis', ioredis],
  ] as const) {
    inboxReceiverSpec(`redisStore (${name})`, (test) =>
      redisStore({ client, prefix: `${prefix}${name}:${test}:`, checkOfflineQueue: false }),
    );
    stepsSpec(`redisStore (${name})`, (test) =>
      redisStore({ client, prefix: `${prefix}${name}:${test}:`, checkOfflineQueue: false }),
    );
  }
}
