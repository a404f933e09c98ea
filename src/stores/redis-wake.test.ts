import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { after } from 'node:test';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { inboxWakeSpec } from '../../test/support/inbox-wake.js';
import { reachable, servers } from '../../test/support/servers.js';
import { redisStore } from './redis.js';

/** node-redis 4, installed under the alias `redis4`. */
const createClient4 = (createRequire(import.meta.url)('redis4') as { createClient: typeof createClient })
  .createClient;

const run = randomBytes(4).toString('hex');

if (
  await reachable('Redis', servers.redis, async () => {
    const probe = await createClient({ url: servers.redis }).connect();
    await probe.ping();
    await probe.quit();
  })
) {
  const admin = await createClient({ url: servers.redis }).connect();
  const clients: (() => Promise<unknown>)[] = [];
  after(async () => {
    for (const close of clients) await close().catch(() => undefined);
    for await (const keys of admin.scanIterator({ MATCH: `oo-wake-${run}*`, COUNT: 1000 })) {
      if (keys.length > 0) await admin.unlink(keys);
    }
    await admin.quit();
  });

  const spec = (label: string, connect: (name: string) => object) => {
    const name = `oo-wake-${run}-${label}`;
    const prefix = `${name}:`;
    return {
      store() {
        const client = connect(name);
        clients.push(async () => {
          const c = client as { quit?: () => Promise<unknown>; disconnect?: () => unknown };
          if (c.quit) await c.quit();
          else c.disconnect?.();
        });
        return redisStore({ client: client as never, prefix });
      },
      async watchers() {
        const list = String(await admin.sendCommand(['CLIENT', 'LIST', 'TYPE', 'pubsub']));
        return list
          .split('\n')
          .filter((line) => line.includes(` name=${name} `))
          .map((line) => /(?:^|\s)id=(\d+)/.exec(line)?.[1] ?? '')
          .filter((id) => id !== '');
      },
      async kill(id: string) {
        return Number(await admin.sendCommand(['CLIENT', 'KILL', 'ID', id])) === 1;
      },
    };
  };

  // node-redis connects on `connect()`; a store may be made before it is connected (its commands
  // wait in the offline queue), as these tests do.
  inboxWakeSpec(
    'Redis (node-redis)',
    spec('nr', (name) => {
      const client = createClient({ url: servers.redis, name });
      client.on('error', () => {});
      void client.connect();
      return client;
    }),
  );
  inboxWakeSpec(
    'Redis (node-redis 4)',
    spec('nr4', (name) => {
      const client = createClient4({ url: servers.redis, name });
      client.on('error', () => {});
      void client.connect();
      return client;
    }),
  );
  inboxWakeSpec(
    'Redis (ioredis)',
    spec('io', (name) => {
      const client = new Redis(servers.redis, { connectionName: name });
      client.on('error', () => {});
      return client;
    }),
  );
}
