/**
 * The CLI's own Redis client (openStore, used by `inspect` and the demo's workers) through an outage
 * of its own redis-server: no start-up warning, calls fail fast while the server is away, the process
 * lives on, the same store works again once the server is back; an unreachable server at start is an
 * error at once, not a wait.
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { openStore } from '../../src/cli/stores.js';
import { redisBinaries } from '../support/redis-cluster.js';
import { type RedisInstance, startRedisInstance } from '../support/redis-instance.js';
import { reachable } from '../support/servers.js';

let binaries = false;
try {
  await redisBinaries();
  binaries = true;
} catch (err) {
  await reachable('redis-server binary', 'redis-server on PATH', () => Promise.reject(err));
}

if (binaries) {
  describe('CLI openStore on Redis through an outage (own redis-server)', () => {
    let redis: RedisInstance;
    before(async () => {
      redis = await startRedisInstance();
    });
    after(async () => {
      await redis?.destroy();
    });

    it('opens a client the start-up check has nothing to say about', async () => {
      const warned: string[] = [];
      const original = console.warn;
      console.warn = (...args: unknown[]) => warned.push(args.join(' '));
      let opened: Awaited<ReturnType<typeof openStore>> | undefined;
      try {
        opened = await openStore(redis.url, 'cli-outage');
      } finally {
        console.warn = original;
        await opened?.close();
      }
      assert.deepEqual(
        warned.filter((w) => /^onceonly: this node-redis/.test(w)),
        [],
      );
    });

    it('fails fast while the server is stopped, and works again once it is back', async () => {
      const opened = await openStore(redis.url, 'cli-outage');
      try {
        assert.equal((await opened.store.claim('held', { leaseMs: 60_000 })).status, 'acquired');
        await redis.stop();
        try {
          // An unhandled 'error' from the client would end this process here.
          await new Promise((resolve) => setTimeout(resolve, 300));
          const started = performance.now();
          const outcome = await Promise.race([
            opened.store.claim('during', { leaseMs: 60_000 }).then(
              () => 'answered',
              () => 'failed',
            ),
            new Promise((resolve) => setTimeout(() => resolve('hangs'), 3_000)),
          ]);
          assert.equal(outcome, 'failed');
          assert.ok(performance.now() - started < 2_000, 'fails within 2 s');
        } finally {
          await redis.start();
        }
        const deadline = performance.now() + 10_000;
        let status: string | undefined;
        while (!status && performance.now() < deadline) {
          status = await opened.store.claim('held', { leaseMs: 60_000 }).then(
            (c) => c.status,
            () => undefined,
          );
          if (!status) await new Promise((resolve) => setTimeout(resolve, 200));
        }
        assert.equal(status, 'in-flight', 'the same store works again, and the claim survived');
      } finally {
        await opened.close();
      }
    });

    it('says at once that a server is unreachable at start', async () => {
      const started = performance.now();
      await assert.rejects(openStore('redis://127.0.0.1:1', 'cli-outage'), /ECONNREFUSED/);
      assert.ok(performance.now() - started < 5_000);
    });
  });
}
