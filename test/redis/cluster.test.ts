/**
 * redisStore on a real 3-master Redis Cluster, started here from `redis-server --cluster-enabled yes`
 * on free ports in a temp dir and deleted afterwards, with node-redis `createCluster` and ioredis
 * `Cluster`. Every claim script acts on one key (and its steps hash, named in its slot), and every
 * inbox script on keys of one hash tag, so nothing crosses slots.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { Cluster } from 'ioredis';
import { createCluster } from 'redis';
import { redisStore } from '../../src/stores/redis.js';
import { runConformance, runInboxConformance } from '../../src/testing/index.js';
import { redisBinaries, startRedisCluster, type TestCluster } from '../support/redis-cluster.js';
import { reachable } from '../support/servers.js';
import { sideBySide } from '../support/side-by-side.js';

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

  sideBySide('redisStore conformance on Redis Cluster, the clients side by side', (runner) => [
    runConformance({
      name: 'redisStore conformance on Redis Cluster (node-redis createCluster)',
      factory: () => redisStore({ client: nodeRedis, prefix: `${prefix}nr:`, checkEvictionPolicy: false }),
      runner,
    }),
    runConformance({
      name: 'redisStore conformance on Redis Cluster (ioredis Cluster)',
      factory: () => redisStore({ client: ioredis, prefix: `${prefix}io:`, checkEvictionPolicy: false }),
      runner,
    }),

    runInboxConformance({
      name: 'redisStore inbox conformance on Redis Cluster (node-redis createCluster)',
      factory: () =>
        redisStore({ client: nodeRedis, prefix: `${prefix}inr:`, checkEvictionPolicy: false }).inbox!,
      runner,
    }),
    runInboxConformance({
      name: 'redisStore inbox conformance on Redis Cluster (ioredis Cluster)',
      factory: () =>
        redisStore({ client: ioredis, prefix: `${prefix}iio:`, checkEvictionPolicy: false }).inbox!,
      runner,
    }),
  ]);

  describe('redisStore on Redis Cluster', () => {
    for (const [name, client] of [
      ['node-redis', nodeRedis],
      ['ioredis', ioredis],
    ] as const) {
      it(`keeps each receiver's inbox on one master and spreads receivers over all of them (${name})`, async () => {
        // Prepare: 30 receivers with 5 entries each, some taken, completed, retried and buried.
        const store = redisStore({ client, prefix: `${prefix}spread-${name}:`, checkEvictionPolicy: false });
        const inbox = store.inbox!;
        const receivers = Array.from({ length: 30 }, (_, i) => `rcv${i}`);
        await Promise.all(
          receivers.flatMap((r) =>
            Array.from({ length: 5 }, (_, i) =>
              inbox.accept({
                key: `${r}:evt-${i}`,
                receiver: r,
                fingerprint: 'f'.repeat(64),
                body: new Uint8Array([i]),
                headers: [],
                receivedAt: new Date(),
              }),
            ),
          ),
        );
        // Act: every operation of the inbox, on every receiver.
        for (const r of receivers) {
          const [a, b, c] = await inbox.take({ limit: 3, leaseMs: LONG, receiver: r });
          assert.equal(await inbox.complete(a!.lease, { retentionMs: LONG, dropBody: true }), true);
          assert.equal(await inbox.retry(b!.lease, { delayMs: LONG, error: 'x' }), true);
          assert.equal(await inbox.bury(c!.lease, { error: 'y' }), true);
          assert.equal(await inbox.extend(c!.lease, { leaseMs: LONG }), false);
        }
        await Promise.all(started.nodes.map((n) => n.cli('script', 'flush')));
        assert.equal(await inbox.requeue({ dead: true }), 30);
        // Assess: the totals over every receiver, and where the keys are.
        assert.deepEqual(
          { ...(await inbox.stats()), oldestDueMs: 0 },
          { pending: 120, processing: 0, completed: 30, dead: 0, scheduled: 30, oldestDueMs: 0 },
        );
        const held = await Promise.all(
          started.nodes.map(async (n) => {
            const out = await n.cli('--scan', '--pattern', `${prefix}spread-${name}:i:{*`);
            return new Set(
              out
                .split('\n')
                .filter(Boolean)
                .map((k) => /\{([^}]*)\}/.exec(k)![1]!),
            );
          }),
        );
        for (const r of receivers) {
          assert.equal(held.filter((h) => h.has(r)).length, 1, `${r} lives on one master`);
        }
        assert.ok(
          held.every((h) => h.size > 0),
          `receivers on every master: ${held.map((h) => h.size).join(', ')}`,
        );
      });
    }

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
        // With the clock read, a token on a cluster still carries no lease end: TIME reads one
        // master's clock, not the key's, so a copy asks the key's PTTL.
        const later = await store.claim('after-clock', { leaseMs: LONG });
        assert.ok(later.status === 'acquired' && /^[0-9a-f]{32}$/.test(later.lease.token));
        assert.equal((await store.claim('after-clock', { leaseMs: LONG })).status, 'in-flight');
      });
    }

    it("keeps a claim key's steps in its slot whatever braces the key holds, through an ioredis keyPrefix too", async () => {
      // Prepare: keys with and without hash tags, broken ones, and a client that prefixes every key.
      const keyed = new Cluster(
        started.nodes.map((n) => ({ host: n.host, port: n.port })),
        { keyPrefix: `${prefix}kp:` },
      );
      try {
        // (Not `a{}{b}`: the clients' own slot function, cluster-key-slot, reads it unlike Redis, so
        // even a claim of it bounces between masters.)
        const keys = ['evt_1', 'a{b', '{}x', 'x}y', '{tag}z', '{', 'é {'];
        for (const [name, client] of [
          ['node-redis', nodeRedis],
          ['ioredis', ioredis],
          ['ioredis keyPrefix', keyed],
        ] as const) {
          const store = redisStore({ client, prefix: `${prefix}steps-${name}:`, checkEvictionPolicy: false });
          for (const key of keys) {
            // Act: every script that names the steps hash, and the steps themselves (a cross-slot
            // script would fail with CROSSSLOT).
            const first = await store.claim(key, { leaseMs: LONG, retentionMs: LONG });
            assert.equal(first.status, 'acquired', `${name} ${key}`);
            if (first.status !== 'acquired') continue;
            assert.equal(await store.steps!.save(first.lease, 'charge', `"${key}"`), true);
            assert.equal(await store.extend(first.lease, { leaseMs: LONG }), true);
            assert.equal(await store.release(first.lease), true);
            const second = await store.claim(key, { leaseMs: LONG });
            assert.ok(second.status === 'acquired' && second.lease.attempt === 2, `${name} ${key}`);
            assert.deepEqual(Object.fromEntries(await store.steps!.load(second.lease)), {
              charge: `"${key}"`,
            });
            assert.equal(await store.confirm(second.lease, { retentionMs: LONG }), true);
            assert.deepEqual(await store.record(key, { retentionMs: LONG }), { duplicate: true });
          }
        }
      } finally {
        keyed.disconnect();
      }
    });

    it('checks maxmemory-policy on every master and warns about the one that evicts', async () => {
      // Prepare: one master of three evicts.
      const [, second] = started.nodes;
      await second!.cli('config', 'set', 'maxmemory-policy', 'volatile-lfu');
      try {
        for (const client of [nodeRedis, ioredis]) {
          const warning = new Promise<string>((resolve) => {
            // Act
            const store = redisStore({ client, prefix, checkOfflineQueue: false, onWarning: resolve });
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
