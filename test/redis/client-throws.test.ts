/**
 * A client (a wrapper, a circuit breaker, a guard on script bodies) may refuse a command by throwing
 * at once instead of returning a rejected promise. The store still answers with its own mapped
 * error, a rejection and never a throw, on the first script call and on the EVAL after NOSCRIPT.
 * On a throwaway redis-server (SCRIPT FLUSH there, never on the shared one).
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { createClient } from 'redis';
import { StoreUnavailableError } from '../../src/errors.js';
import { redisStore } from '../../src/stores/redis.js';
import { redisBinaries } from '../support/redis-cluster.js';
import { type RedisInstance, startRedisInstance } from '../support/redis-instance.js';
import { reachable } from '../support/servers.js';

if (await reachable('redis-server binary', 'redis-server on PATH', () => redisBinaries())) {
  describe('redisStore over a client that refuses a command by throwing', () => {
    let redis: RedisInstance;
    let client: ReturnType<typeof createClient>;
    before(async () => {
      redis = await startRedisInstance({ persist: false });
      client = createClient({ url: redis.url, disableOfflineQueue: true });
      client.on('error', () => {});
      await client.connect();
    });
    after(async () => {
      await client.quit().catch(() => {});
      await redis.destroy();
    });

    const refusing = (command: string) => ({
      evalSha: client.evalSha.bind(client),
      sendCommand(args: string[]) {
        if (args[0] === command) throw new Error(`circuit open: ${command} refused`);
        return client.sendCommand(args);
      },
    });

    for (const command of ['EVALSHA', 'EVAL']) {
      it(`${command} refused at once (the EVAL after NOSCRIPT, for the second): a StoreUnavailableError, as a rejection`, async () => {
        const store = redisStore({
          client: refusing(command),
          checkOfflineQueue: false,
          checkEvictionPolicy: false,
        });
        await redis.cli('SCRIPT', 'FLUSH');
        let pending: Promise<unknown> | undefined;
        assert.doesNotThrow(() => {
          pending = store.record('k', { retentionMs: 60_000 });
        });
        const error = await pending!.then(
          () => undefined,
          (err: unknown) => err,
        );
        assert.ok(error instanceof StoreUnavailableError, `rejected with ${String(error)}`);
        assert.match((error as Error).message, /circuit open/);
      });
    }
  });
}
