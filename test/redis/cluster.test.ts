/**
 * redisStore on a real 3-master Redis Cluster, started here from `redis-server --cluster-enabled yes`
 * on free ports in a temp dir and deleted afterwards, with node-redis `createCluster` and ioredis
 * `Cluster`. Every script acts on one key, so nothing crosses slots.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { Cluster } from 'ioredis';
import { createCluster } from 'redis';
import { redisStore } from '../../src/stores/redis.js';
import { runConformance } from '../../src/testing/index.js';
import { redisBinaries, startRedisCluster, type TestCluster } from '../support/redis-cluster.js';
import { reachable } from '../support/servers.js';

const LONG = 60_000;
const prefix = `oo-cluster-${randomBytes(4).toString('hex')}:`;

let cluster: TestCluster | undefined;
if (
  await reachable('Redis Cluster from redis-server', 'redis-server and redis-cli on PATH', async () => {
    await redisBinaries();
  })
) {
  // Starting can take longer than reachable()'s probe allows on a slow runner, so it is awaited here;
  // a failure fails the file (it never skips once the binaries are there).
  cluster = await startRedisCluster(3);
  const started = cluster;
  const rootNodes = started.nodes.map((n) => ({ url: n.url }));
  const nodeRedis = await createCluster({ rootNodes }).connect();
  const ioredis = new Cluster(started.nodes.map((n) => ({ host: n.host, port: n.port })));
  after(async () => {
    await Promise.allSettled([nodeRedis.close(), ioredis.quit()]);
    await started.stop();
  });

  await runConformance({
    name: 'redisStore conformance on Redis Cluster (node-redis createCluster)',
    factory: () => redisStore({ client: nodeRedis, prefix: `${prefix}nr:`, checkEvictionPolicy: false }),
    runner: { describe, it },
  });
  await runConformance({
    name: 'redisStore conformance on Redis Cluster (ioredis Cluster)',
    factory: () => redisStore({ client: ioredis, prefix: `${prefix}io:`, checkEvictionPolicy: false }),
    runner: { describe, it },
  });

  describe('redisStore on Redis Cluster', () => {
    for (const [name, client] of [
      ['node-redis', nodeRedis],
      ['ioredis', ioredis],
    ] as const) {
      it(`spreads keys over every master and survives SCRIPT FLUSH on all of them (${name})`, async () => {
        // Prepare: enough keys to land on all three masters.
        const store = redisStore({ client, prefix: `${prefix}flush-${name}:`, checkEvictionPolicy: false });
        const keys = Array.from({ length: 60 }, (_, i) => `evt-${i}`);
        const leases = await Promise.all(keys.map((k) => store.claim(k, { leaseMs: LONG })));
        // Act: every node forgets its scripts while the leases are held.
        await Promise.all(started.nodes.map((n) => n.cli('script', 'flush')));
        const confirmed = await Promise.all(
          leases.map((c) => c.status === 'acquired' && store.confirm(c.lease, { retentionMs: LONG })),
        );
        // Assess
        assert.ok(confirmed.every((ok) => ok === true));
        const dbsizes = await Promise.all(started.nodes.map(async (n) => Number(await n.cli('dbsize'))));
        assert.ok(
          dbsizes.every((n) => n > 0),
          `keys on every master: ${dbsizes.join(', ')}`,
        );
        for (const key of keys) assert.equal((await store.inspect(key))?.state, 'completed');
      });
    }

    it('checks maxmemory-policy on every master and warns about the one that evicts', async () => {
      // Prepare: one master of three evicts.
      const [, second] = started.nodes;
      await second!.cli('config', 'set', 'maxmemory-policy', 'volatile-lfu');
      try {
        for (const client of [nodeRedis, ioredis]) {
          const warning = new Promise<string>((resolve) => {
            // Act
            const store = redisStore({ client, prefix, onWarning: resolve });
            void store.inspect('policy');
          });
          // Assess
          assert.match(await warning, /"volatile-lfu"/);
        }
      } finally {
        await second!.cli('config', 'set', 'maxmemory-policy', 'noeviction');
      }
    });
  });
}
